"""What the slash commands need of the app: a narrow interface, not ``CloverApp``.

``SlashCommands`` reads the session's state and sends Ops through these few
members only, so a command cannot reach into the rest of the app and a test
can stand in for the app with anything that has them.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any, Protocol

from textual.screen import Screen

from clover_code import protocol as p
from clover_code.ui.bridge import EventBridge
from clover_code.ui.turn_stats import TurnStats
from clover_code.ui.widgets.status_bar import StatusBar
from clover_code.ui.widgets.transcript import Transcript

__all__ = ["SlashHost"]


class SlashHost(Protocol):
    """The app as the slash commands see it."""

    transcript: Transcript
    status_bar: StatusBar
    bridge: EventBridge
    stats: TurnStats
    started: p.SessionStarted | None
    turn_running: bool
    turn_files: list[list[str]]
    turn_prompts: list[str]
    """The files each turn of this view changed, oldest first."""
    rewinding: bool
    """A /rewind was sent and its answer has not come yet."""
    cwd: Path
    sessions_dir: Path | None
    approval_modes: tuple[p.ApprovalMode, ...]
    """The approval modes Shift+Tab cycles through (those an administrator allows)."""

    def send(self, op: p.Op) -> None:
        """Send an Op to the session."""
        ...

    def send_text(self, text: str) -> None:
        """Send what the user typed (a prompt or a command)."""
        ...

    def send_prompt(self, text: str) -> None:
        """Send ``text`` as a prompt, even when it starts with a slash (a custom command)."""
        ...

    def retry_open(self) -> bool:
        """Retry opening the session now; False when it is not waiting to."""
        ...

    def open_session(self, resume: Path | None) -> object:
        """Open a session (resuming ``resume``) in place of the current one."""
        ...

    async def action_quit(self) -> None:
        """Close the session and leave."""
        ...

    def push_screen(self, screen: Screen[Any], callback: Callable[[Any], None]) -> object:
        """Show a modal screen; ``callback`` gets its answer."""
        ...

    def run_worker(self, work: Coroutine[Any, Any, None]) -> object:
        """Run ``work`` in the background."""
        ...

    def notify(self, message: str, *, timeout: float) -> None:
        """A short toast."""
        ...
