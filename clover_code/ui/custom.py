"""The app's side of custom commands and skills: completion, running ``/name args``,
and the ``/skills`` listing. The session found them; the app only reads its lists
(through the few fields below, not the core's classes)."""

from __future__ import annotations

from collections.abc import Sequence

from clover_code.ui.bridge import CommandInfo, SkillInfo
from clover_code.ui.command_table import SlashCommand
from clover_code.ui.host import SessionHost
from clover_code.ui.widgets.transcript import Transcript


def custom_commands(app: SessionHost) -> list[CommandInfo]:
    """The open session's custom commands (none while no session is open)."""
    session = app.bridge.session
    return list(session.commands) if session is not None else []


def completions(app: SessionHost) -> list[SlashCommand]:
    """The new session's custom commands, as the prompt's completion offers them."""
    return [
        SlashCommand(c.name, c.description or f"custom command ({c.source})", c.argument_hint)
        for c in custom_commands(app)
    ]


def run_custom(app: SessionHost, text: str) -> bool:
    """Send ``/name args`` as a prompt when ``name`` is a custom command (the session
    expands it); False when it is not one."""
    name = text[1:].split(maxsplit=1)[0] if text[1:].strip() else ""
    if not any(c.name == name for c in custom_commands(app)):
        return False
    app.send_prompt(text)
    return True


def show_skills(app: SessionHost, transcript: Transcript) -> None:
    """``/skills``: each skill's name, where it comes from, and its description, read
    from disk again, so a skill added while the app runs is listed (and marked)."""
    session = app.bridge.session
    offered: Sequence[SkillInfo] = session.skills if session is not None else []
    skills = session.skills_on_disk() if session is not None else []
    if not skills:
        transcript.add_note(
            "No skills found. Add a folder with a SKILL.md to .clover/skills/, "
            ".agents/skills/ or your config dir's skills/."
        )
        return
    known = {s.name for s in offered}
    new = " (added since this session started: the model can load it from the next session)"
    lines = [
        f"{s.name} ({s.source}, {s.folder}): {s.description}" + ("" if s.name in known else new)
        for s in skills
    ]
    transcript.add_note("\n  ".join(["Skills (the model loads one when it fits):", *lines]))
