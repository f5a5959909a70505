"""A background command run as a process of this machine, in its own process group.

The host sandbox runs a job as ``bash -c`` in a new session; bubblewrap runs it
as a ``bwrap`` process in a new session (whose pid namespace holds everything
the command starts). Either way the job is its process group: when its first
process ends, whatever is left of the group is stopped too, so nothing it
started outlives it (a program that leaves the group on purpose, with
``setsid``, escapes on the host; under bubblewrap the pid namespace takes it).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import time

from clover_code.proc.children import signal_group
from clover_code.tools.sandbox.base import JobEnd, JobFeed
from clover_code.tools.sandbox.output import PipeReader

__all__ = ["LocalJob", "group_alive", "terminate_group"]


def group_alive(pgid: int) -> bool:
    """Whether the group still has a member that is not a zombie.

    Orphaned members become zombies until init reaps them, and some container
    inits never do; on Linux /proc tells the two apart.
    """
    if not signal_group(pgid, 0):
        return False
    try:
        pids = [name for name in os.listdir("/proc") if name.isdigit()]
    except OSError:
        return True
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat", "rb") as handle:
                fields = handle.read().rsplit(b")", 1)[1].split()
        except (OSError, IndexError):
            continue
        # After the command name: state, ppid, pgrp, ...
        if len(fields) > 2 and int(fields[2]) == pgid and fields[0] not in (b"Z", b"X"):
            return True
    return False


async def terminate_group(pgid: int, grace: float) -> None:
    """SIGTERM the group, give it ``grace`` seconds, then SIGKILL what is left."""
    if not signal_group(pgid, signal.SIGTERM):
        return
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        await asyncio.sleep(0.05)
        if not group_alive(pgid):
            return
    signal_group(pgid, signal.SIGKILL)


class LocalJob:
    """A started process (the leader of its own group) whose output pipe is read into
    ``feed`` until the job ends; ``stop`` ends the group."""

    def __init__(
        self,
        proc: asyncio.subprocess.Process,
        read_fd: int,
        feed: JobFeed,
        *,
        kill_grace: float = 1.0,
        drain_timeout: float = 0.5,
    ) -> None:
        self._proc = proc
        self.pgid = proc.pid
        self._kill_grace = kill_grace
        self._drain_timeout = drain_timeout
        self._stopped = False
        self._ended = asyncio.ensure_future(self._follow(read_fd, feed))

    async def _follow(self, read_fd: int, feed: JobFeed) -> JobEnd:
        loop = asyncio.get_running_loop()
        pipe = os.fdopen(read_fd, "rb", buffering=0)
        transport: asyncio.BaseTransport | None = None
        try:
            transport, reader = await loop.connect_read_pipe(lambda: PipeReader(feed), pipe)
            code = await self._proc.wait()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(reader.closed.wait(), self._drain_timeout)
            # What the first process left running goes with it.
            await terminate_group(self.pgid, self._kill_grace)
        finally:
            if transport is not None:
                transport.close()
            else:
                pipe.close()
        if self._stopped:
            return JobEnd(None)
        return JobEnd(code if code >= 0 else 128 - code)

    @property
    def running(self) -> bool:
        """Whether the job has not ended yet."""
        return not self._ended.done()

    async def wait(self) -> JobEnd:
        """The job's end, once its first process exited and its output was read."""
        return await asyncio.shield(self._ended)

    async def stop(self) -> None:
        """SIGTERM the group, SIGKILL it after the grace period; wait for the end."""
        if self._ended.done():
            return
        self._stopped = True
        await terminate_group(self.pgid, self._kill_grace)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(self._ended), self._kill_grace + 5.0)

    async def refresh(self) -> None:
        """Nothing to do: the output is read as it comes."""

    def kill_now(self) -> None:
        """SIGKILL the group at once (the sandbox is closing)."""
        self._stopped = True
        signal_group(self.pgid, signal.SIGKILL)
