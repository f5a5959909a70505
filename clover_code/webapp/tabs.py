"""One browser tab's app process, which never outlives its tab or the server.

textual-serve starts each tab's app through a shell, in the server's own
process group, and only asks it to quit: an app still starting, or one that
does not read the request, ran on after its tab closed and after the server
stopped (reparented to PID 1). Here the app is started without a shell, in a
process group of its own, with a parent-death signal (``parent_tie``); closing
the tab asks it to quit, then signals the whole group: SIGTERM, then SIGKILL
for what is left.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shlex
import signal
from asyncio.subprocess import PIPE, Process
from typing import Any

from textual_serve.app_service import AppService

from clover_code.proc.parent_tie import ENV

__all__ = ["TabProcess"]

GRACE = 3.0
"""Seconds the app gets to quit after each request (the quit message, then SIGTERM)."""


class TabProcess(AppService):
    """The app process of one tab (``argv``), stopped with everything it started."""

    def __init__(self, argv: list[str], **service: Any) -> None:
        super().__init__(shlex.join(argv), **service)
        self.argv = argv
        self._stopped: asyncio.Task[None] | None = None

    @property
    def pid(self) -> int | None:
        """The app process's id (also its process group's), once started."""
        return None if self._process is None else self._process.pid

    async def _open_app_process(self, width: int = 80, height: int = 24) -> Process:
        environment = self._build_environment(width=width, height=height)
        environment[ENV] = str(os.getpid())  # the app dies with this server
        self._process = process = await asyncio.create_subprocess_exec(
            *self.argv,
            stdin=PIPE,
            stdout=PIPE,
            stderr=PIPE,
            env=environment,
            start_new_session=True,
        )
        assert process.stdin is not None
        self._stdin = process.stdin
        return process

    async def stop(self) -> None:
        """Stop the app (once, however often it is asked) and wait until it is gone."""
        if self._stopped is None:
            self._stopped = asyncio.ensure_future(self._stop())
        await asyncio.shield(self._stopped)

    async def _stop(self) -> None:
        process = self._process
        if process is None:
            return
        await self._download_manager.cancel_app_downloads(app_service_id=self.app_service_id)
        with contextlib.suppress(Exception):  # the app may no longer read its input
            await self.send_meta({"type": "quit"})
        for sig in (signal.SIGTERM, signal.SIGKILL):
            if await self._exited(process):
                break
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(process.pid, sig)
        await process.wait()
        if self._task is not None:
            await self._task  # ends at the output's end
            self._task = None

    @staticmethod
    async def _exited(process: Process) -> bool:
        try:
            await asyncio.wait_for(process.wait(), GRACE)
        except TimeoutError:
            return False
        return True
