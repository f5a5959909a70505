"""The Notification hooks of an ACP session: the editor's user is told nothing by us,
and we cannot see whether the editor has focus, so a wait that lasts ``notify_after``
seconds runs them (a ``protocol.Notify``): an approval the editor shows, or the
prompt after a turn ends. A wait that ends first (answered, a new prompt) runs none.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from clover_code import protocol as p

__all__ = ["Waits"]


class Waits:
    """Times the session's waits; ``send`` takes a ``Notify`` to the session."""

    def __init__(self, after: float, send: Callable[[p.Notify], Awaitable[None]]) -> None:
        self.after = after
        self._send = send
        self._timers: dict[str, asyncio.Task[None]] = {}

    def start(self, key: str, message: str, kind: p.NotificationType) -> None:
        """A wait begins (``key`` names it, to end it later)."""
        self.end(key)
        self._timers[key] = asyncio.create_task(self._signal(key, message, kind))

    def end(self, key: str) -> None:
        """The wait is over (answered, or the user sent a prompt)."""
        timer = self._timers.pop(key, None)
        if timer is not None and not timer.done():
            timer.cancel()

    def close(self) -> None:
        """No notification after this (the session is closing)."""
        for key in list(self._timers):
            self.end(key)

    @property
    def waiting(self) -> list[str]:
        """The waits not yet over."""
        return list(self._timers)

    async def _signal(self, key: str, message: str, kind: p.NotificationType) -> None:
        await asyncio.sleep(self.after)
        await self._send(p.Notify(message=message, notification_type=kind))
