"""The one path between the core and the widgets.

``EventBridge.emit`` is the ``emit`` callback the core's ``Session`` calls;
events are queued and handed to the app in batches: one batch is in the
app's hands at a time, and everything that arrives meanwhile becomes the
next one. Handling a batch is cheap (widgets record what changed; drawing
waits for the next frame), so a batch reaches the app within one turn of
its message loop, and a model that streams faster than the screen can paint
is coalesced, never queued without bound. The batch goes behind whatever
the app already has queued, keys included. Ops go the other way through
``submit``.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Protocol

from textual.message import Message

from clover_code import protocol as p
from clover_code.protocol import Emit


class CommandInfo(Protocol):
    """What the app reads of a custom command."""

    @property
    def name(self) -> str: ...
    @property
    def description(self) -> str: ...
    @property
    def argument_hint(self) -> str: ...
    @property
    def source(self) -> str: ...


class SkillInfo(Protocol):
    """What the app reads of a skill."""

    @property
    def name(self) -> str: ...
    @property
    def description(self) -> str: ...
    @property
    def folder(self) -> Path: ...
    @property
    def source(self) -> str: ...


class SessionLike(Protocol):
    """What the app needs of a core session (``clover_code.agent.session.Session``)."""

    id: str

    @property
    def commands(self) -> Sequence[CommandInfo]:
        """Custom commands (``/name args``), for completion."""
        ...

    @property
    def skills(self) -> Sequence[SkillInfo]:
        """The skills the session offers the model."""
        ...

    def skills_on_disk(self) -> Sequence[SkillInfo]:
        """The skills on disk now (the offered ones and any added since)."""
        ...

    async def models(self) -> tuple[list[p.ModelOption], str | None]:
        """The models to switch to, and a sentence when the server did not list them."""
        ...

    async def submit(self, op: p.Op) -> None:
        """Act on an op."""
        ...

    async def close(self) -> None:
        """End the session; the transcript is complete afterwards."""
        ...


SessionFactory = Callable[[Emit, Path | None], Awaitable[SessionLike]]
"""Opens a session that reports to ``emit``, resuming the transcript at the path if given."""


class SessionEvents(Message):
    """A batch of protocol events, in the order the core emitted them."""

    def __init__(self, events: list[p.Event]) -> None:
        super().__init__()
        self.events = events


class SessionFailed(Message):
    """The session could not be opened (or its worker died); ``message`` says why."""

    def __init__(self, message: str, exit_code: int) -> None:
        super().__init__()
        self.message = message
        self.exit_code = exit_code


class EventBridge:
    """Owns the session for the app: opens it, batches its events, forwards ops."""

    def __init__(self, post: Callable[[Message], bool], factory: SessionFactory) -> None:
        self._post = post
        self._factory = factory
        self._queue: deque[p.Event] = deque()
        self._wake = asyncio.Event()
        self._handled = asyncio.Event()
        self._handled.set()
        self.session: SessionLike | None = None
        self.events_seen = 0
        self.sent: list[p.Op] = []
        """Every op sent, in order (the user's side of the conversation)."""

    def emit(self, event: p.Event) -> None:
        """Queue an event from the core (called on the app's event loop)."""
        self._queue.append(event)
        self.events_seen += 1
        self._wake.set()

    def batch_handled(self) -> None:
        """The app finished a batch; the next one may go."""
        self._handled.set()

    async def open(self, resume: Path | None = None) -> SessionLike:
        """Open a session (closing the current one first)."""
        if self.session is not None:
            await self.session.close()
            self.session = None
        self.session = await self._factory(self.emit, resume)
        return self.session

    async def pump(self) -> None:
        """Hand queued events to the app until cancelled (the body of a worker)."""
        while True:
            await self._wake.wait()
            await self._handled.wait()
            self._wake.clear()
            batch = list(self._queue)
            self._queue.clear()
            if batch:
                self._handled.clear()
                self._post(SessionEvents(batch))

    async def submit(self, op: p.Op) -> bool:
        """Send an op to the session; False when no session is open."""
        if self.session is None:
            return False
        self.sent.append(op)
        await self.session.submit(op)
        return True

    async def close(self) -> None:
        """Close the session if one is open (idempotent)."""
        session, self.session = self.session, None
        if session is not None:
            await session.close()
