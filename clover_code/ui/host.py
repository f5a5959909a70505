"""What the app's parts need of the app: narrow interfaces, not ``CloverApp``.

``TurnEvents``, ``SlashCommands`` and their helpers read the session's state
and act through these members only, and get the widgets they draw on
explicitly; so none of them imports the app (which imports them), and a test
can stand in for the app with anything that has these members.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Coroutine
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from textual.screen import Screen
from textual.signal import Signal
from textual.theme import Theme

from clover_code import protocol as p
from clover_code.ui.bridge import EventBridge
from clover_code.ui.options import AppOptions
from clover_code.ui.turn_stats import TurnStats

if TYPE_CHECKING:
    from clover_code.review.diff import DiffTarget
    from clover_code.review.session import ReviewReport

__all__ = ["ExtrasHost", "Reviewer", "SessionHost", "SlashHost", "TurnHost"]

Reviewer = Callable[["DiffTarget", Callable[[p.Event], None]], Awaitable["ReviewReport"]]
"""Runs ``/review`` on a target, telling its events to the callback (``review.session``'s
``run_review`` with the app's settings and engines)."""


class SessionHost(Protocol):
    """The session's state as the app keeps it, and how to send to it and ask the user."""

    bridge: EventBridge
    stats: TurnStats
    started: p.SessionStarted | None
    turn_running: bool
    turn_files: list[list[str]]
    """The files each turn of this view changed, oldest first."""
    turn_prompts: list[str]
    """What the user sent for each turn of this view (put back by a rewind)."""
    rewinding: bool
    """A /rewind was sent and its answer has not come yet."""
    approval_modes: tuple[p.ApprovalMode, ...]
    """The approval modes Shift+Tab cycles through (those an administrator allows)."""
    jobs: list[p.JobInfo]
    """The session's background jobs as it last reported them (``JobsChanged``)."""

    def send(self, op: p.Op) -> None:
        """Send an Op to the session."""
        ...

    def send_text(self, text: str) -> None:
        """Send what the user typed (a prompt or a command)."""
        ...

    def send_prompt(self, text: str) -> None:
        """Send ``text`` as a prompt, even when it starts with a slash (a custom command)."""
        ...

    def push_screen(self, screen: Screen[Any], callback: Callable[[Any], None]) -> object:
        """Show a modal screen; ``callback`` gets its answer."""
        ...

    def refresh_git(self) -> object:
        """Read the branch and whether the work tree is dirty again (in the background)."""
        ...


class TurnHost(SessionHost, Protocol):
    """The app as the session's events see it."""

    confidence_seen: bool
    """Some answer carried fill confidences (the engine reports them)."""

    def note_no_confidence(self) -> None:
        """Say once that the engine reports no fill confidences, if the view is on."""
        ...

    @property
    def screen_stack(self) -> list[Screen[Any]]:
        """The screens shown, the main one first."""
        ...

    def call_after_refresh(self, callback: Callable[[str], None], *args: Any) -> object:
        """Call ``callback(*args)`` after the next repaint."""
        ...


class SlashHost(SessionHost, Protocol):
    """The app as the slash commands see it."""

    cwd: Path
    options: AppOptions
    """The app's own settings (its keys and editor mode, for /help)."""
    sessions_dir: Path | None
    reviewer: Reviewer | None
    """Runs ``/review`` (None: reviews are not available)."""

    def retry_open(self) -> bool:
        """Retry opening the session now; False when it is not waiting to."""
        ...

    def open_session(self, resume: Path | None) -> object:
        """Open a session (resuming ``resume``) in place of the current one."""
        ...

    async def action_quit(self) -> None:
        """Close the session and leave."""
        ...

    def run_worker(self, work: Coroutine[Any, Any, None]) -> object:
        """Run ``work`` in the background."""
        ...


class ExtrasHost(SessionHost, Protocol):
    """The app as its notifications, status line, theme and keys see it (``app_extras``)."""

    cwd: Path
    app_focus: bool
    """Whether the terminal has focus (focus reporting)."""
    theme: str
    theme_changed_signal: Signal[Theme]

    def set_keymap(self, keymap: dict[str, str]) -> None:
        """Bind the actions named to these keys instead of their defaults."""
        ...

    def write_terminal(self, sequence: str) -> None:
        """Write an escape sequence to the terminal (between frames)."""
        ...

    def notify(self, message: str, *, severity: Any = "information", timeout: float) -> None:
        """Show a toast for ``timeout`` seconds."""
        ...

    def call_after_refresh(self, callback: Callable[[], None]) -> object:
        """Call ``callback`` after the next repaint."""
        ...

    def run_worker(self, work: Coroutine[Any, Any, None]) -> object:
        """Run ``work`` in the background."""
        ...
