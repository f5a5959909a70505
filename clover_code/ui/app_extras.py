"""What the app's own settings add around the session: notifications, the status-line
command, the theme and the keys (``AppOptions``).

``AppExtras`` is given the app as an ``ExtrasHost`` (``host.py``) and the widgets
it draws on; the app tells it what happened (``saw`` a batch of events,
``session_opened``), and it sets the theme and keymap when the app mounts,
saves a theme picked in the command palette to the user config, starts the
status line once a session is open, and keeps the ``Notifier`` informed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rich.text import Text
from textual.theme import Theme

from clover_code import protocol as p
from clover_code.errors import ConfigError
from clover_code.ui.clock import Clock
from clover_code.ui.host import ExtrasHost
from clover_code.ui.notify import Notifier
from clover_code.ui.options import AppOptions
from clover_code.ui.widgets.status_bar import StatusBar
from clover_code.ui.widgets.transcript import Transcript

if TYPE_CHECKING:
    # The status-line command's runner is loaded when one is configured (``session_opened``).
    from clover_code.ui.statusline import StatusLine

__all__ = ["STATUS_FIELDS", "AppExtras"]

STATUS_FIELDS = (
    "model", "context_used", "approval", "branch", "dirty", "busy", "speed", "sandbox",
    "editor_mode", "jobs", "background", "cost",
)  # fmt: skip
"""The status bar's attributes whose change runs the status-line command again."""


class AppExtras:
    """Notifications, the status line, the theme and the keys of one app."""

    def __init__(
        self,
        app: ExtrasHost,
        options: AppOptions,
        *,
        status_bar: StatusBar,
        transcript: Transcript,
    ) -> None:
        self.app = app
        self.options = options
        self.status_bar = status_bar
        self.transcript = transcript
        self.notifier = Notifier(
            mode=options.notify,
            after=options.notify_after,
            environ=options.environ,
            write=app.write_terminal,
            focused=lambda: app.app_focus,
            send=app.send,
        )
        self.statusline: StatusLine | None = None
        self._asked: dict[str, str] = {}
        """Approval requests not yet over, by request id: the call each is about."""
        self._opened_at = Clock.now()
        self._theme_ready = False

    def mount(self) -> None:
        """Apply the theme and the keys (the app is mounting)."""
        self.app.theme = self.options.theme
        if self.options.keymap:
            self.app.set_keymap(dict(self.options.keymap))
        self.app.theme_changed_signal.subscribe(self.status_bar, self._theme_changed)
        # The theme set above is announced after this frame: only later changes are picks.
        self.app.call_after_refresh(self._theme_settled)

    def _theme_settled(self) -> None:
        self._theme_ready = True

    def _theme_changed(self, theme: Theme) -> None:
        if not self._theme_ready or self.options.save_theme is None:
            return
        try:
            self.options.save_theme(theme.name)
        except ConfigError as exc:
            self.app.notify(str(exc), severity="warning", timeout=8)
            return
        self.app.notify(f"Theme {theme.name} saved in your user config.", timeout=3)

    def session_opened(self) -> None:
        """A session is open: start the status line (once; its settings are those the
        session opened with, after any trust question)."""
        if self.statusline is not None:
            self.statusline.changed()
            return
        config = self.options.statusline()
        if config is None:
            return
        if config.note:
            self.transcript.add_note(config.note)
        from clover_code.ui.statusline import StatusLine

        self.statusline = StatusLine(
            config, payload=self._payload, show=self._show, drop=self._drop
        )
        for name in STATUS_FIELDS:
            self.status_bar.watch(self.status_bar, name, self._changed, init=False)
        self.app.run_worker(self.statusline.run())
        self.statusline.changed()

    def _changed(self, _: object = None) -> None:
        if self.statusline is not None and not self.statusline.dropped:
            self.statusline.changed()

    def _payload(self) -> dict[str, Any]:
        from clover_code.ui.statusline import status_payload

        vim = self.status_bar.editor_mode or None
        return status_payload(
            started=self.app.started,
            cwd=self.app.cwd,
            bar=self.status_bar,
            stats=self.app.stats,
            opened_at=self._opened_at,
            editor_mode=vim,
        )

    def _show(self, line: Text | None) -> None:
        self.status_bar.custom = line

    def _drop(self, sentence: str) -> None:
        self.transcript.add_note(sentence, "warning")

    def saw(self, events: list[p.Event], *, queued: bool) -> None:
        """A batch of the session's events was shown: waits start and end with them."""
        for event in events:
            if isinstance(event, p.TurnStarted):
                self.notifier.turn_started()
            elif isinstance(event, p.ApprovalRequested):
                self._asked[event.request_id] = event.call_id
                self.notifier.approval(event.request_id, event.name)
            elif isinstance(event, p.TurnFinished):
                # A background child's question outlives the turn (the dialog stays too).
                background = self.transcript.background_calls
                self._asked = {r: c for r, c in self._asked.items() if c in background}
                self.notifier.turn_finished(
                    event.status, next_queued=queued, asking=list(self._asked)
                )

    def answered(self, request_id: str) -> None:
        """The user answered an approval: its wait is over."""
        self._asked.pop(request_id, None)
        self.notifier.answered(request_id)

    def close(self) -> None:
        """The app is leaving: no notification after this."""
        self.notifier.close()
