"""``clover-code`` without ``--task``: build the app around a real session and run it.

The app's modules and the session factory's (the agent, its tools) are imported
here, before the app starts; the engine's (the HTTP client, a local model) and
the sandbox's when the session opens, after the first paint.
"""

from __future__ import annotations

import asyncio
import importlib
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from clover_code.config.settings import Settings
from clover_code.errors import CloverError
from clover_code.protocol import Emit
from clover_code.ui.bridge import SessionFactory, SessionLike

if TYPE_CHECKING:
    from clover_code.agent.engines import Engines
    from clover_code.review.diff import DiffTarget
    from clover_code.review.session import ReviewReport
    from clover_code.ui.app import CloverApp
    from clover_code.ui.host import Reviewer
    from clover_code.ui.options import AppOptions
    from clover_code.ui.statusline import StatusLineConfig
    from clover_code.ui.widgets.trust import TrustQuestion


def session_factory(
    settings: Settings,
    cwd: Path,
    engines: Engines | None = None,
    *,
    current: Callable[[], Settings] | None = None,
) -> SessionFactory:
    """An ``open(emit, resume)`` coroutine function that opens the session (``open_session``).

    With ``engines``, a local engine is loaded once and lent to every session
    the app opens (``/resume`` does not load the checkpoint again). With
    ``current``, each session takes the settings it returns then (they change
    when the user trusts the project's settings).
    """

    async def open_session(emit: Emit, resume: Path | None) -> SessionLike:
        settings_now = current() if current is not None else settings
        return await _open(settings_now, emit, resume)

    async def _open(settings: Settings, emit: Emit, resume: Path | None) -> SessionLike:
        from clover_code import protocol as p
        from clover_code.agent.open import SessionOptions, open_session
        from clover_code.engine.base import EngineWarning
        from clover_code.telemetry.spans import observed

        return await open_session(
            settings,
            cwd,
            SessionOptions(
                emit=observed(emit, settings.managed.forced_telemetry),
                approval_mode=settings.approval_or("ask"),
                resume=resume,
                engines=engines,
                loading=lambda text: emit(p.Notice(level=EngineWarning.level_of(text), text=text)),
            ),
        )

    return open_session


def review_runner(cwd: Path, engines: Engines | None, current: Callable[[], Settings]) -> Reviewer:
    """``/review``'s runner: a read-only review session with the settings ``current`` gives
    (the app's engines lent to it)."""

    async def review(target: DiffTarget, emit: Emit) -> ReviewReport:
        from clover_code.review.session import run_review

        return await run_review(current(), cwd, target, emit=emit, engines=engines)

    return review


def trust_question(
    settings: Settings, reload: Callable[[], Settings] | None
) -> tuple[TrustQuestion | None, Callable[[], Settings]]:
    """The question to ask when the project's files have untrusted loosening
    settings, and where the session takes its settings from (they are read
    again once the user trusts)."""
    holder = [settings]
    report = settings.project_trust
    untrusted = report.untrusted() if report is not None else []
    if report is None or not untrusted or reload is None:
        return None, lambda: holder[0]
    from clover_code.config.settings import trust_store
    from clover_code.ui.widgets.trust import TrustQuestion

    root = report.root

    def accept() -> str | None:
        try:
            # The content shown is the content trusted: the digests read at start.
            trust_store().trust(root, untrusted)
            holder[0] = reload()
        except CloverError as exc:  # the settings stay as they were
            return str(exc)
        return None

    files = [(str(f.path), list(f.loosening)) for f in untrusted]
    return TrustQuestion(files, accept), lambda: holder[0]


def app_options(settings: Settings, cwd: Path, current: Callable[[], Settings]) -> AppOptions:
    """The app's own settings (theme, keys, editor mode, notifications, status line), checked
    (``check_options``: a ``ConfigError`` for a theme or keys the app cannot use)."""
    from clover_code.config.settings import user_config_path
    from clover_code.config.user_file import set_user_value
    from clover_code.ui.app import CloverApp
    from clover_code.ui.options import AppOptions, check_options

    def statusline() -> StatusLineConfig | None:
        from clover_code.agent.open import host_command, plugin_statusline

        now = current()  # after the trust question: a project's command applies once trusted
        command, note = now.statusline_command, None
        if not command:  # yours wins over every plugin's
            command, note = plugin_statusline(now, cwd)
        if not command:
            return None
        from clover_code.ui.statusline import StatusLineConfig

        run = host_command(now, cwd, command, now.statusline_timeout)
        return StatusLineConfig(command, run, now.statusline_interval / 1000, note)

    options = AppOptions(
        theme=settings.theme,
        keymap=dict(settings.keys),
        editor_mode=settings.editor_mode,
        shade_confidence=settings.shade_confidence,
        low_confidence=settings.low_confidence,
        notify=settings.notify,
        notify_after=settings.notify_after,
        statusline=statusline,
        save_theme=lambda name: set_user_value(user_config_path(), "theme", name),
    )
    check_options(options, {"the app": CloverApp.BINDINGS})
    return options


def run_app(
    settings: Settings,
    cwd: Path,
    *,
    resume: Path | None,
    reload: Callable[[], Settings] | None = None,
    loaded: Callable[[], None] = lambda: None,
) -> int:
    """Run the app in this terminal until the user quits; returns the exit code.

    ``reload`` reads the settings again (after the user trusted the project's);
    ``loaded`` is called once the app's modules are loaded, before it starts.
    Raises ``ConfigError`` before the app starts when its own settings cannot be
    used (a theme it does not have, a key given to two actions).
    """
    from clover_code.agent.engines import Engines
    from clover_code.ui.app import CloverApp

    # The session's modules load now, with the app's: what loading made is frozen
    # (``loaded``), and the collector would otherwise scan it as the session opens.
    importlib.import_module("clover_code.agent.open")
    loaded()
    question, current = trust_question(settings, reload)
    options = app_options(settings, cwd, current)
    engines = Engines()
    app = CloverApp(
        session_factory(settings, cwd, engines, current=current),
        cwd=cwd,
        sessions_dir=settings.resolved_sessions_dir(),
        resume=resume,
        show_denoising=bool(getattr(settings, "show_denoising", True)),
        trust=question,
        reviewer=review_runner(cwd, engines, current),
        approval_modes=settings.managed.approval_modes(),
        options=options,
    )
    try:
        code = app.run()
    finally:
        if engines.loaded:
            asyncio.run(engines.close())
    for line in (jobs_stopped(app), resume_hint(app)):
        if line:
            print(line)
    return int(code) if code is not None else 0


def jobs_stopped(app: CloverApp) -> str | None:
    """The line printed after the app closes when quitting stopped background jobs."""
    jobs = app.stopped_on_quit
    if not jobs:
        return None
    names = "; ".join(f"job {job.id}: {job.command}" for job in jobs)
    return f"Stopped {len(jobs)} background job{'s' if len(jobs) > 1 else ''} ({names})."


def resume_hint(app: CloverApp) -> str | None:
    """The line printed after the app closes: how to continue this session."""
    if app.started is None:
        return None
    return f"Session saved. Resume it with: clover-code --resume {app.started.session_id}"


__all__ = [
    "app_options",
    "jobs_stopped",
    "resume_hint",
    "review_runner",
    "run_app",
    "session_factory",
    "trust_question",
]
