"""The engines of one process: local checkpoints loaded once and lent out.

Kept apart from ``open.py`` so that a front end can hold an ``Engines`` from
its start without importing the tools and the agent before its first paint.
"""

from __future__ import annotations

from collections.abc import Callable

from clover_code.config.settings import Settings
from clover_code.engine.base import Backend
from clover_code.engine.local.shared import SharedBackend
from clover_code.engine.select import build_backend, is_local, open_backend

__all__ = ["Engines", "build_backend"]


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
