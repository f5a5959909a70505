"""The engines of one process: local checkpoints loaded once and lent out, and the
watch on each session's engine that remembers why a response failed.

Kept apart from ``open.py`` so that a front end can hold an ``Engines`` from
its start without importing the tools and the agent before its first paint.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Callable
from contextlib import aclosing

from clover_code.config.settings import Settings
from clover_code.engine.base import Backend, ChatRequest
from clover_code.engine.events import EngineEvent, Failed
from clover_code.engine.local.shared import SharedBackend
from clover_code.engine.select import build_backend, is_local, open_backend
from clover_code.errors import EngineError

__all__ = ["Engines", "WatchedBackend", "build_backend"]


class Engines:
    """The local engines of one process, each loaded once and lent to every session.

    A local checkpoint takes minutes and most of a GPU to load: the app (on
    ``/resume``) and the ACP agent (on each ``session/new``) pass the same
    ``Engines`` to every ``open_session``. A remote engine is opened per
    session. ``close`` releases the loaded ones when the process ends.
    """

    def __init__(self) -> None:
        self._local: dict[tuple[str, str], SharedBackend] = {}

    @property
    def loaded(self) -> bool:
        """Whether a local engine is loaded now."""
        return any(shared.loaded for shared in self._local.values())

    async def open(self, settings: Settings, notice: Callable[[str], None] | None) -> Backend:
        """The engine ``settings`` choose: a loan of the loaded one, or a new one."""
        if not is_local(settings):
            return await open_backend(settings, notice)
        key = (str(settings.engine), str(settings.model_path))
        shared = self._local.setdefault(key, SharedBackend())
        return await shared.lend(lambda: open_backend(settings, notice))

    async def close(self) -> None:
        """Release every loaded engine (idempotent)."""
        local = list(self._local.values())
        self._local.clear()
        for shared in local:
            await shared.close()


class WatchedBackend:
    """The session's backend, remembering the last engine error a response ended with.

    A turn that fails reports only a sentence; headless needs the error's kind
    too, so that a key refused mid-task exits 3 like one refused at start.
    """

    def __init__(self, inner: Backend) -> None:
        self.inner = inner
        # Wrapped after ``check()``, when the model is known and no longer changes.
        self.name, self.model, self.block_size = inner.name, inner.model, inner.block_size
        self.failure: EngineError | None = None

    async def stream(self, request: ChatRequest) -> AsyncGenerator[EngineEvent, None]:
        """The inner backend's stream, unchanged."""
        async with aclosing(self.inner.stream(request)) as events:
            async for event in events:
                if isinstance(event, Failed):
                    self.failure = event.error
                yield event

    async def check(self) -> None:
        """The inner backend's check."""
        await self.inner.check()

    async def aclose(self) -> None:
        """Close the inner backend."""
        await self.inner.aclose()
