"""What each slash command does, acting on the app through ``SlashHost``."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from clover_code import protocol as p
from clover_code.protocol import APPROVAL_MODES
from clover_code.ui.commands import COMMANDS, parse
from clover_code.ui.custom import run_custom, show_skills
from clover_code.ui.rewind import REWIND_CHOICES, fork, rewind
from clover_code.ui.widgets.confirm import ConfirmScreen

if TYPE_CHECKING:
    from clover_code.ui.slash_host import SlashHost

KEYS_HELP: list[tuple[str, str]] = [
    ("Enter", "send (queued while a turn runs)"),
    ("Alt+↑", "edit the last queued prompt"),
    ("Shift+Enter, Ctrl+J", "new line"),
    ("↑ ↓", "prompt history"),
    ("Tab", "complete"),
    ("@", "mention a file"),
    ("PageUp PageDown", "scroll the transcript (also with Shift)"),
    ("Ctrl+Home Ctrl+End", "top / end of the transcript"),
    ("Esc", "interrupt"),
    ("Ctrl+C twice", "quit"),
    ("Shift+Tab", "next approval mode"),
    ("F2", "denoising view on/off"),
    ("Ctrl+P", "commands"),
]
"""The keys /help lists, each with what it does."""


def removed_turns(prompts: list[str], turns: int) -> list[str]:
    """The lines naming each of the last ``turns`` turns that an undo takes out of the
    conversation, numbered from the session's first turn, with its prompt."""
    first = max(0, len(prompts) - turns)
    shown = [
        f"  turn {n}: {' '.join(prompt.split())[:60]}"
        for n, prompt in enumerate(prompts[first:], first + 1)
    ]
    if not shown:
        return []
    head = "and removes this turn" if len(shown) == 1 else f"and removes these {len(shown)} turns"
    return ["", f"{head} from the conversation:", *shown]


class SlashCommands:
    """``run`` and one method per command (the ``handlers`` table), acting on ``app``."""

    def __init__(self, app: SlashHost) -> None:
        self.app = app
        self.handlers: dict[str, Callable[[str], None]] = {
            "help": self._cmd_help,
            "model": self._cmd_model,
            "approval": self._cmd_approval,
            "sandbox": self._cmd_sandbox,
            "undo": self._cmd_undo,
            "rewind": self._cmd_rewind,
            "retry": self._cmd_retry,
            "diff": self._cmd_diff,
            "compact": self._cmd_compact,
            "clear": self._cmd_clear,
            "sessions": self._cmd_sessions,
            "resume": self._cmd_resume,
            "cost": self._cmd_cost,
            "quit": self._cmd_quit,
            "fork": self._cmd_fork,
            "plan": self._cmd_plan,
            "skills": self._cmd_skills,
        }
        """Each command's method, by name (the names of ``COMMANDS``, checked here)."""
        missing = {c.name for c in COMMANDS} ^ set(self.handlers)
        assert not missing, f"slash commands without a method or entry: {missing}"

    def run(self, text: str) -> None:
        """Run ``/name args``; unknown names get a hint."""
        parsed = parse(text)
        if parsed is None and run_custom(self.app, text):
            return
        if parsed is None:
            name = text.split()[0] if text.split() else text
            self.app.transcript.add_note(
                f"unknown command {name}; /help lists them (start with // to send a slash).",
                "warning",
            )
            return
        command, arg = parsed
        self.handlers[command.name](arg)

    def _cmd_help(self, arg: str) -> None:
        commands = [(f"/{c.name} {c.args}".rstrip(), c.help) for c in COMMANDS]
        self.app.transcript.add_help([("Commands:", commands), ("Keys:", KEYS_HELP)])

    def _cmd_model(self, arg: str) -> None:
        s = self.app.started
        if s is None:
            self.app.transcript.add_note("No engine is connected.", "warning")
            return
        text = f"Engine {s.engine}, model {s.model}."
        if arg:
            text += " Switching models needs a new session: restart with --model NAME."
        self.app.transcript.add_note(text)

    def _cmd_approval(self, arg: str) -> None:
        if not arg:
            current = self.app.status_bar.approval or "?"
            modes = ", ".join(APPROVAL_MODES)
            self.app.transcript.add_note(
                f"Approval mode: {current}. Set one with /approval MODE ({modes}) "
                "or cycle with Shift+Tab."
            )
            return
        if arg not in APPROVAL_MODES:
            self.app.transcript.add_note(
                f"unknown approval mode '{arg}'; choose one of {', '.join(APPROVAL_MODES)}.",
                "warning",
            )
            return
        self.app.send(p.SetApprovalMode(mode=arg))
        self.app.status_bar.approval = arg

    def _cmd_sandbox(self, arg: str) -> None:
        kind = self.app.started.sandbox if self.app.started else "unknown"
        hint = " Restart with --sandbox docker|bwrap|none to change it."
        self.app.transcript.add_note(f"Shell commands run in: {kind}.{hint}")

    def _cmd_undo(self, arg: str) -> None:
        # the last turn that changed files (the core finds it in its checkpoints)
        back = next((n for n, files in enumerate(reversed(self.app.turn_files), 1) if files), 1)
        self._revert(back, arg, last_change=True)

    def _cmd_rewind(self, arg: str) -> None:
        words = arg.split()
        count = words[0] if words else ""
        what = [w for w in words[1:] if w != "--force"]
        if (
            not count.isdigit()
            or int(count) < 1
            or len(what) > 1
            or not set(what) <= set(REWIND_CHOICES)
        ):
            self.app.transcript.add_note(
                "Say how many turns to go back and, if you like, what: /rewind 2 "
                "[files|conversation|both] (add --force to override files you changed since).",
                "warning",
            )
            return
        if self.app.turn_running:
            self.app.transcript.add_note("Interrupt the running turn (Esc) first.", "warning")
            return
        turns = int(count)
        recent = self.app.turn_files[-turns:] if self.app.turn_files else []
        files = sorted({path for turn in recent for path in turn})
        details = [f"Files: {', '.join(files) or '(no file edits recorded in this view)'}"]
        rewind(self.app, turns, what[0] if what else "", "--force" in words, details)

    def _cmd_fork(self, arg: str) -> None:
        fork(self.app, self.open_path)

    def _cmd_skills(self, arg: str) -> None:
        show_skills(self.app)

    def _cmd_plan(self, arg: str) -> None:
        self._cmd_approval("plan")
        self.app.transcript.add_note(
            "Plan mode: the model explores and writes a plan without changing anything; "
            "you decide afterwards whether to carry it out."
        )
        if arg:
            self.app.send_prompt(arg)

    def _revert(self, turns: int, arg: str, *, last_change: bool = False) -> None:
        force = "--force" in arg.split()
        if self.app.turn_running:
            self.app.transcript.add_note(
                "Interrupt the running turn (Esc) before undoing.", "warning"
            )
            return
        recent = self.app.turn_files[-turns:] if self.app.turn_files else []
        files = sorted({path for turn in recent for path in turn})
        details = [f"  {path}" for path in files] or ["  (no file edits recorded in this view)"]
        what = "the last turn" if turns == 1 else f"the last {turns} turns"
        if last_change:
            what = "the last turn that changed files" + (
                f" ({turns} turns back)" if turns > 1 else ""
            )
        details += removed_turns(self.app.turn_prompts, turns)

        def answered(yes: bool | None) -> None:
            if yes:
                self.app.send(p.Undo(turns=turns, force=force, last_change=last_change))
                self.app.transcript.add_note("Undo requested…")

        self.app.push_screen(
            ConfirmScreen(f"Revert the changes {what} made to these files?", details), answered
        )

    def _cmd_retry(self, arg: str) -> None:
        app = self.app
        if app.retry_open():
            app.transcript.add_note("Connecting to the model server…")
            return
        if app.turn_running:
            app.transcript.add_note("A turn is running; Esc interrupts it.", "warning")
            return
        last = next((op for op in reversed(app.bridge.sent) if isinstance(op, p.UserInput)), None)
        if last is None:
            app.transcript.add_note("Nothing to retry: no prompt was sent yet.")
            return
        app.send_text(last.text if not last.text.startswith("/") else "/" + last.text)

    def _cmd_diff(self, arg: str) -> None:
        self.app.send(p.ShowDiff())

    def _cmd_compact(self, arg: str) -> None:
        self.app.send(p.Compact())
        self.app.transcript.add_note("Compacting the conversation…")

    def _cmd_clear(self, arg: str) -> None:
        self.app.send(p.ClearHistory())
        self.app.turn_files.clear()

        async def clear() -> None:
            await self.app.transcript.clear()
            self.app.transcript.add_note(
                "Started a fresh conversation; the old transcript is kept."
            )

        self.app.run_worker(clear())

    def _cmd_sessions(self, arg: str) -> None:
        self._pick(arg)

    def _pick(self, arg: str) -> None:
        """The session picker: this repository's sessions, or every one with ``--all``."""
        from clover_code.agent.open import list_sessions
        from clover_code.fs.workspace_root import find_root
        from clover_code.ui.widgets.session_picker import SessionPicker

        if self.app.sessions_dir is None:
            self.app.transcript.add_note("No sessions directory is configured.", "warning")
            return
        every = "--all" in arg.split()
        root, _ = find_root(self.app.cwd)
        sessions = list_sessions(self.app.sessions_dir, None if every else root)
        current = self.app.bridge.session.id if self.app.bridge.session else None
        sessions = [s for s in sessions if s.id != current]
        if not sessions:
            where = "" if every else f" in {root} (/sessions --all lists every directory)"
            self.app.transcript.add_note(f"No earlier sessions{where}.")
            return
        title = "Every directory's sessions" if every else "This repository's sessions"
        title += ", newest first" + ("" if every else " · --all: every directory")

        def chosen(info: object) -> None:
            path = getattr(info, "path", None)
            if isinstance(path, Path):
                self._resume_path(path)

        self.app.push_screen(SessionPicker(sessions, title), chosen)

    def _cmd_resume(self, arg: str) -> None:
        from clover_code.agent.open import find_session
        from clover_code.errors import CloverError
        from clover_code.fs.workspace_root import find_root

        if self.app.sessions_dir is None:
            self.app.transcript.add_note("No sessions directory is configured.", "warning")
            return
        words = [w for w in arg.split() if w != "--all"]
        if not words:
            self._pick(arg)
            return
        try:
            root, _ = find_root(self.app.cwd)
            path = find_session(self.app.sessions_dir, words[0], root)
        except CloverError as exc:
            self.app.transcript.add_note(str(exc), "error")
            return
        self._resume_path(path)

    def open_path(self, path: Path, note: str = "") -> None:
        """Continue in the session stored at ``path`` (closing the current one); ``note``
        is the transcript's first line."""
        self._resume_path(path, note)

    def _resume_path(self, path: Path, note: str = "") -> None:
        if self.app.turn_running:
            self.app.transcript.add_note("Interrupt the running turn before resuming.", "warning")
            return
        self.app.turn_files.clear()
        self.app.stats.new_session()

        async def reopen() -> None:
            await self.app.transcript.clear()
            if note:
                self.app.transcript.add_note(note)
            self.app.open_session(path)

        self.app.run_worker(reopen())

    def _cmd_cost(self, arg: str) -> None:
        s = self.app.stats
        self.app.transcript.add_note(
            f"This session: {s.responses} model responses, {s.completion_tokens:,} tokens "
            f"generated, {s.prompt_tokens:,} tokens in the last prompt. A local or "
            "self-hosted engine has no per-token price."
        )
        if s.subagents:
            tokens = sum(c.tokens for c in s.subagents)
            self.app.transcript.add_note(
                f"Child agents: {len(s.subagents)}, {tokens:,} tokens generated "
                f"(not in the totals above):\n{s.subagents_report()}"
            )

    def _cmd_quit(self, arg: str) -> None:
        self.app.run_worker(self.app.action_quit())

    def cycle_approval(self) -> None:
        """Shift+Tab: the next approval mode."""
        current = self.app.status_bar.approval or "ask"
        index = APPROVAL_MODES.index(current) if current in APPROVAL_MODES else 0
        mode = APPROVAL_MODES[(index + 1) % len(APPROVAL_MODES)]
        self.app.send(p.SetApprovalMode(mode=mode))
        self.app.status_bar.approval = mode

    def toggle_denoise(self) -> None:
        """F2: the live denoising view on or off."""
        denoise = self.app.transcript.denoise
        denoise.enabled = not denoise.enabled
        self.app.notify(f"Denoising view {'on' if denoise.enabled else 'off'}.", timeout=2)

    def show_history(self, path: Path) -> None:
        """Draw a resumed session's earlier messages."""
        from clover_code.agent.open import load
        from clover_code.engine.base import tool_calls
        from clover_code.errors import CloverError

        try:
            loaded = load(path)
        except CloverError as exc:
            self.app.transcript.add_note(str(exc), "error")
            return
        for message in loaded.messages:
            role, content = message.get("role"), message.get("content") or ""
            if role == "user" and isinstance(content, str):
                self.app.transcript.add_user(content)
            elif role == "assistant":
                if isinstance(content, str) and content:
                    self.app.transcript.add_answer(content)
                for call in tool_calls(message):
                    name = call.get("function", {}).get("name", "?")
                    self.app.transcript.add_note(f"(called {name})")
        self.app.transcript.end_turn()
