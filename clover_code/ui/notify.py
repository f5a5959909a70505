"""Telling the user that clover-code waits for them: a desktop notification or the bell.

A wait starts when a turn ends (the prompt waits: ``idle_prompt``) or an
approval is asked (``permission_prompt``). ``Notifier`` signals it at once
when the terminal does not have focus (focus reporting, which Textual turns
on: ``CSI ?1004h``), else once the wait has lasted ``notify_after`` seconds;
a wait that ends first (the user types, answers, or the next queued prompt
starts) never signals. A wait that began at most ``FOCUS_GRACE`` seconds
before the terminal lost focus signals then: the user left before it could
have been seen. Each signal is also sent to the session as a
``protocol.Notify``, which runs the Notification hooks; ``notify = "off"``
silences the terminal, not the hooks.

How the terminal is told (``terminal_channel``): OSC 9 where the terminal
shows it as a desktop notification (iTerm2, WezTerm, Windows Terminal,
Ghostty), kitty's OSC 99, OSC 777 for foot and rxvt-unicode, else the bell.
The terminal is recognised from variables that survive inside tmux
(``KITTY_WINDOW_ID``, ``WEZTERM_PANE``, ``LC_TERMINAL``...), and inside tmux
the sequence is wrapped for its passthrough (``allow-passthrough on``).
The text is the app's own sentence, stripped of control characters, so
nothing in it can end the sequence early or start another.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from typing import Literal

from clover_code import protocol as p
from clover_code.config.app_settings import NotifyMode

__all__ = ["Channel", "Notifier", "notification_sequence", "terminal_channel"]

Channel = Literal["osc9", "osc99", "osc777", "bell"]
TITLE = "clover-code"
MAX_TEXT = 200
"""Most characters of a notification's text (terminals cut long ones anyway)."""

_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]+")


def terminal_channel(mode: NotifyMode, environ: Mapping[str, str]) -> Channel | None:
    """How to notify in the terminal ``environ`` describes (None: not at all)."""
    if mode == "off":
        return None
    if mode == "bell":
        return "bell"
    known = _known_channel(environ)
    if mode == "osc":
        return known or "osc777"
    return known or "bell"


def _known_channel(env: Mapping[str, str]) -> Channel | None:
    program = env.get("TERM_PROGRAM", "")
    term = env.get("TERM", "")
    if term == "xterm-kitty" or "KITTY_WINDOW_ID" in env:
        return "osc99"
    if (
        program in ("iTerm.app", "WezTerm", "ghostty")
        or env.get("LC_TERMINAL") == "iTerm2"
        or term == "xterm-ghostty"
        or any(name in env for name in ("WEZTERM_PANE", "GHOSTTY_RESOURCES_DIR", "WT_SESSION"))
    ):
        return "osc9"
    if term.startswith(("foot", "rxvt-unicode")):
        return "osc777"
    return None


def _clean(text: str) -> str:
    return _CONTROL.sub(" ", text).strip()[:MAX_TEXT]


def notification_sequence(channel: Channel, title: str, message: str, *, tmux: bool) -> str:
    """The bytes that make the terminal show ``message`` (wrapped for tmux's passthrough)."""
    title, message = _clean(title), _clean(message)
    if channel == "bell":
        return "\a"  # tmux passes a bell on by itself
    if channel == "osc9":
        sequence = f"\x1b]9;{title}: {message}\a"
    elif channel == "osc777":
        sequence = f"\x1b]777;notify;{title.replace(';', ',')};{message}\a"
    else:  # kitty: the title, then the body, as one notification
        sequence = f"\x1b]99;i=clover:d=0;{title}\x1b\\\x1b]99;i=clover:p=body;{message}\x1b\\"
    if tmux:
        return "\x1bPtmux;" + sequence.replace("\x1b", "\x1b\x1b") + "\x1b\\"
    return sequence


FOCUS_GRACE = 2.0
"""Seconds: a wait this young when the terminal loses focus was not seen."""


@dataclass(slots=True)
class _Wait:
    message: str
    kind: p.NotificationType
    timer: asyncio.TimerHandle | None = None
    started: float = 0.0


class Notifier:
    """Signals the waits that last (or start while the terminal is away).

    ``write`` puts bytes on the terminal, ``focused`` says whether it has focus
    and ``send`` takes the ``Notify`` op to the session.
    """

    def __init__(
        self,
        *,
        mode: NotifyMode,
        after: float,
        environ: Mapping[str, str],
        write: Callable[[str], None],
        focused: Callable[[], bool],
        send: Callable[[p.Op], None],
    ) -> None:
        self.channel = terminal_channel(mode, environ)
        self.tmux = bool(environ.get("TMUX"))
        self.after = after
        self._write = write
        self._focused = focused
        self._send = send
        self._waits: dict[str, _Wait] = {}

    def turn_started(self) -> None:
        """A turn began: the prompt no longer waits."""
        self._end("idle")

    def turn_finished(
        self, status: p.TurnStatus, *, next_queued: bool, asking: Collection[str] = ()
    ) -> None:
        """A turn ended: every approval it asked is over (but those of ``asking``, the
        requests of background children, which go on), and the prompt waits (unless
        the user interrupted it, or a queued prompt starts the next turn)."""
        kept = {f"approval:{request_id}" for request_id in asking}
        for key in [k for k in self._waits if k != "idle" and k not in kept]:
            self._end(key)
        if status == "interrupted" or next_queued:
            return
        ended = "finished" if status == "completed" else f"stopped ({status})"
        message = f"The turn {ended}; clover-code is waiting for your input."
        self._start("idle", message, "idle_prompt")

    def approval(self, request_id: str, tool: str) -> None:
        """An approval is asked."""
        message = f"clover-code needs your permission to use {tool}."
        self._start(f"approval:{request_id}", message, "permission_prompt")

    def answered(self, request_id: str) -> None:
        """An approval was answered."""
        self._end(f"approval:{request_id}")

    def user_active(self) -> None:
        """The user is typing: the prompt's wait is over."""
        self._end("idle")

    def focus_lost(self) -> None:
        """The terminal lost focus: the waits that began too recently to have been
        seen signal now (the others keep their timers)."""
        now = time.monotonic()
        for key, wait in list(self._waits.items()):
            if wait.timer is not None and now - wait.started <= FOCUS_GRACE:
                wait.timer.cancel()
                self._signal(key)

    def close(self) -> None:
        """Forget every wait (the app is leaving)."""
        for key in list(self._waits):
            self._end(key)

    @property
    def waiting(self) -> list[str]:
        """The waits not yet over: ``idle``, ``approval:ID``."""
        return list(self._waits)

    def _start(self, key: str, message: str, kind: p.NotificationType) -> None:
        self._end(key)
        wait = _Wait(message, kind, started=time.monotonic())
        self._waits[key] = wait
        if not self._focused() or self.after <= 0:
            self._signal(key)
        else:
            wait.timer = asyncio.get_running_loop().call_later(self.after, self._signal, key)

    def _end(self, key: str) -> None:
        wait = self._waits.pop(key, None)
        if wait is not None and wait.timer is not None:
            wait.timer.cancel()

    def _signal(self, key: str) -> None:
        wait = self._waits.get(key)
        if wait is None:
            return
        wait.timer = None
        if self.channel is not None:
            self._write(notification_sequence(self.channel, TITLE, wait.message, tmux=self.tmux))
        self._send(p.Notify(message=wait.message, notification_type=wait.kind, title=TITLE))
