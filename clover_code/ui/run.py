"""``clover-code`` without ``--task``: build the app around a real session and run it.

Only the app module is imported here; the engine, sandbox and tools are
imported when the session opens, after the first paint.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TYPE_CHECKING

from clover_code.config import Settings
from clover_code.engine.base import Backend
from clover_code.engine.shared import SharedBackend
from clover_code.ui.bridge import Emit, SessionFactory, SessionLike

if TYPE_CHECKING:
    from clover_code.ui.app import CloverApp


def session_factory(
    settings: Settings, cwd: Path, shared: SharedBackend | None = None
) -> SessionFactory:
    """An ``open(emit, resume)`` coroutine function that builds the engine and the session.

    With ``shared``, a local engine is loaded once and lent to every session
    the app opens (``/resume`` does not load the checkpoint again).
    """

    async def open_session(emit: Emit, resume: Path | None) -> SessionLike:
        from clover_code import protocol as p
        from clover_code.agent.session import Session
        from clover_code.engine.select import is_local, open_backend

        async def opener() -> Backend:
            return await open_backend(settings, lambda text: emit(p.Notice(text=text)))

        if shared is not None and is_local(settings):
            backend = await shared.lend(opener)
        else:
            backend = await opener()
        return await Session.open(
            settings,
            backend,
            cwd,
            emit=emit,
            approval_mode=settings.approval or "ask",
            resume=resume,
        )

    return open_session


def run_app(settings: Settings, cwd: Path, *, resume: Path | None) -> int:
    """Run the app in this terminal until the user quits; returns the exit code."""
    from clover_code.ui.app import CloverApp

    shared = SharedBackend()
    app = CloverApp(
        session_factory(settings, cwd, shared),
        cwd=cwd,
        sessions_dir=settings.resolved_sessions_dir(),
        resume=resume,
        show_denoising=bool(getattr(settings, "show_denoising", True)),
    )
    try:
        code = app.run()
    finally:
        if shared.loaded:
            asyncio.run(shared.close())
    hint = resume_hint(app)
    if hint:
        print(hint)
    return int(code) if code is not None else 0


def resume_hint(app: CloverApp) -> str | None:
    """The line printed after the app closes: how to continue this session."""
    if app.started is None:
        return None
    return f"Session saved. Resume it with: clover-code --resume {app.started.session_id}"


__all__ = ["resume_hint", "run_app", "session_factory"]
