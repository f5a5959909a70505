"""A background command in the Docker sandbox's container.

The runner (``runner.py``) runs it like any command, in its own process group
and with its marker, but with no timeout; its output frames go to the job's
feed as they come and its ``X`` frame ends it. Stopping it is the runner's
``kill`` (the group and every marked process); when the runner does not answer,
the command's processes are killed through ``docker exec`` (``--kill TOKEN``).
It shares the container's network with every later command.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from typing import Any

from clover_code.tools.sandbox.base import JobEnd
from clover_code.tools.sandbox.docker_link import RunnerGone, RunnerLink

__all__ = ["DockerJob"]

_STOP_WAIT = 5.0
"""Seconds to wait for the runner to report a killed job before killing from outside."""


class DockerJob:
    """One background command of the runner (see the module)."""

    def __init__(
        self,
        link: RunnerLink,
        cid: int,
        done: asyncio.Future[dict[str, Any]],
        kill_from_outside: Callable[[], Awaitable[None]],
    ) -> None:
        self._link = link
        self._cid = cid
        self._done = done
        self._kill_from_outside = kill_from_outside
        done.add_done_callback(lambda _: link.unregister(cid))

    async def wait(self) -> JobEnd:
        """How the job ended: its exit code, or lost with its container."""
        try:
            info = await asyncio.shield(self._done)
        except RunnerGone as exc:
            return JobEnd(None, lost=f"the sandbox container stopped ({exc})")
        if info.get("killed") or info.get("timed_out"):
            return JobEnd(None)
        return JobEnd(int(info["code"]))

    async def stop(self) -> None:
        """Have the runner kill the job's processes; from outside if it does not answer."""
        if self._done.done():
            return
        try:
            self._link.send({"op": "kill", "id": self._cid})
        except RunnerGone:
            return  # the container is gone, and the job with it
        try:
            await asyncio.wait_for(asyncio.shield(self._done), _STOP_WAIT)
        except TimeoutError:
            await self._kill_from_outside()
        except RunnerGone:
            pass
        with contextlib.suppress(Exception):
            await asyncio.wait_for(asyncio.shield(self._done), 1.0)

    async def refresh(self) -> None:
        """Nothing to do: the runner sends the output as it comes."""
