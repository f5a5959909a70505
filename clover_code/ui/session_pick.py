"""``/sessions`` and ``/resume`` in the app: an earlier session picked (this repository's,
or every directory's) or named by its id, then continued in place of this one."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from clover_code.ui.host import SlashHost
from clover_code.ui.widgets.transcript import Transcript

__all__ = ["pick_session", "resume_session"]


def pick_session(
    app: SlashHost, transcript: Transcript, arg: str, open_path: Callable[[Path], None]
) -> None:
    """The session picker: this repository's sessions, or every one with ``--all``."""
    from clover_code.agent.open import list_sessions
    from clover_code.fs.workspace_root import find_root
    from clover_code.ui.widgets.session_picker import SessionPicker

    if app.sessions_dir is None:
        transcript.add_note("No sessions directory is configured.", "warning")
        return
    every = "--all" in arg.split()
    root, _ = find_root(app.cwd)
    sessions = list_sessions(app.sessions_dir, None if every else root)
    current = app.bridge.session.id if app.bridge.session else None
    sessions = [s for s in sessions if s.id != current]
    if not sessions:
        where = "" if every else f" in {root} (/sessions --all lists every directory)"
        transcript.add_note(f"No earlier sessions{where}.")
        return
    title = "Every directory's sessions" if every else "This repository's sessions"
    title += ", newest first" + ("" if every else " · --all: every directory")

    def chosen(info: object) -> None:
        path = getattr(info, "path", None)
        if isinstance(path, Path):
            open_path(path)

    app.push_screen(SessionPicker(sessions, title), chosen)


def resume_session(
    app: SlashHost, transcript: Transcript, arg: str, open_path: Callable[[Path], None]
) -> None:
    """Continue the session ``arg`` names (an id or a unique prefix), or pick one without."""
    from clover_code.agent.open import find_session
    from clover_code.errors import CloverError
    from clover_code.fs.workspace_root import find_root

    if app.sessions_dir is None:
        transcript.add_note("No sessions directory is configured.", "warning")
        return
    words = [w for w in arg.split() if w != "--all"]
    if not words:
        pick_session(app, transcript, arg, open_path)
        return
    try:
        root, _ = find_root(app.cwd)
        path = find_session(app.sessions_dir, words[0], root)
    except CloverError as exc:
        transcript.add_note(str(exc), "error")
        return
    open_path(path)
