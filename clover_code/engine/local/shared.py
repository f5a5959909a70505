"""One loaded local engine lent to every session of a process.

A local checkpoint takes minutes and most of a GPU to load, so the app (on
``/resume``) and the ACP agent (on each ``session/new``) must not load it
again per session: sessions get a ``_Loan`` whose ``aclose`` leaves the
model loaded; ``SharedBackend.close`` releases it when the process ends.
Requests of different sessions stream at the same time: the hf engine
decodes them together in the same forwards, SGLang batches them itself.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Awaitable, Callable, Sequence
from contextlib import aclosing

from clover_code.engine.base import Backend, ChatRequest
from clover_code.engine.events import EngineEvent, Failed
from clover_code.errors import EngineError

__all__ = ["SharedBackend"]


class _Loan:
    """A session's view of the shared backend: everything but closing, and the
    failures of this session's responses (not another session's)."""

    def __init__(self, inner: Backend) -> None:
        self.inner = inner
        self.name = inner.name
        self.model = inner.model
        self.block_size = inner.block_size
        self.failure: EngineError | None = None
        """The error this session's last failed response ended with."""

    @property
    def notices(self) -> Sequence[str]:
        """The shared backend's."""
        return self.inner.notices

    async def stream(self, request: ChatRequest) -> AsyncGenerator[EngineEvent, None]:
        """The shared backend's stream."""
        async with aclosing(self.inner.stream(request)) as events:
            async for event in events:
                if isinstance(event, Failed):
                    self.failure = event.error
                yield event

    async def check(self) -> None:
        """The shared backend's check."""
        await self.inner.check()

    async def aclose(self) -> None:
        """Nothing: the backend stays loaded for the next session."""


class SharedBackend:
    """Opens a backend on first use and lends it out; ``close`` releases it."""

    def __init__(self) -> None:
        self._backend: Backend | None = None
        self._lock = asyncio.Lock()

    @property
    def loaded(self) -> bool:
        """Whether a backend is open now."""
        return self._backend is not None

    async def lend(self, opener: Callable[[], Awaitable[Backend]]) -> Backend:
        """The backend for one more session; ``opener`` makes it if none is open yet."""
        async with self._lock:
            if self._backend is None:
                self._backend = await opener()
            return _Loan(self._backend)

    async def close(self) -> None:
        """Release the backend (idempotent); a later ``lend`` opens it again."""
        async with self._lock:
            backend, self._backend = self._backend, None
        if backend is not None:
            await backend.aclose()
