"""``HostSandbox``: run commands directly on this machine, when the user asks for it.

There is no isolation here: commands run as the user, with the user's
environment, and can touch anything the user can. The only confinement is
of the working directory, which persists between commands but is reset to
the workspace root whenever a command leaves the workspace.

Each command is ``bash -c`` in a new session (its own process group), with
stdin from ``/dev/null`` and stdout and stderr merged into one pipe. A
timeout or a cancellation signals the whole group: SIGTERM, then SIGKILL
after a short grace. After the main shell exits the pipe is drained only
briefly, so a background child that keeps it open cannot hold the call up.
The final directory comes back through an ``EXIT`` trap that writes
``pwd -P`` to a private file. A background job (``start_job``) is ``bash -c``
in a new session too, on the host's own network (``local_job.py``).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shlex
import signal
import tempfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from clover_code.errors import ToolError
from clover_code.proc.children import signal_group
from clover_code.redact import without_agent_credentials
from clover_code.tools.sandbox.base import QUIET_ENV, ExecResult, JobFeed, SerialSandbox
from clover_code.tools.sandbox.local_job import LocalJob, group_alive, terminate_group
from clover_code.tools.sandbox.output import OutputSink, PipeReader
from clover_code.tools.sandbox.process import PipedProcess, start_piped

__all__ = ["HostSandbox"]


class HostSandbox(SerialSandbox):
    """Runs commands on the host with ``bash -c``, starting in the workspace root.

    ``output_limit`` bounds the characters kept per command (head + tail);
    ``stream_limit`` bounds what is streamed live to ``on_output``.
    """

    kind = "host"
    contained = False

    def __init__(
        self,
        root: str | os.PathLike[str],
        *,
        output_limit: int = 30_000,
        stream_limit: int = 1_000_000,
        kill_grace: float = 1.0,
        drain_timeout: float = 0.5,
        env: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(root, output_limit=output_limit, stream_limit=stream_limit)
        self.kill_grace = kill_grace
        self.drain_timeout = drain_timeout
        # Even here the model's and the bot's credentials stay out of every command.
        self._env = without_agent_credentials(os.environ if env is None else env) | QUIET_ENV
        self._groups: set[int] = set()
        """Process groups started here that may still have members."""

    async def _exec(
        self, command: str, timeout: float, on_output: Callable[[str], None] | None
    ) -> ExecResult:
        notes = self._cwd_notes()
        fd, cwd_file = tempfile.mkstemp(prefix="clover-cwd-")
        os.close(fd)
        script = f"trap 'pwd -P > {shlex.quote(cwd_file)} 2>/dev/null' EXIT; {command}"
        sink = OutputSink(self.output_limit, self.stream_limit, on_output)
        read_fd, write_fd = os.pipe()
        try:
            try:
                proc = await self._spawn(script, write_fd)
            finally:
                os.close(write_fd)
            pgid = proc.pid
            self._groups.add(pgid)
            pipe_fd, read_fd = read_fd, -1  # _supervise owns and closes it from here
            timed_out, held_open = await self._supervise(proc, pgid, pipe_fd, sink, timeout)
            if not group_alive(pgid):
                self._groups.discard(pgid)
            elif held_open:
                notes.append(
                    "[a background process still holds the output open; "
                    "what it prints from now on is not shown]"
                )
            notes.extend(self._adopt_cwd_file(cwd_file))
        finally:
            if read_fd >= 0:
                with contextlib.suppress(OSError):
                    os.close(read_fd)
            with contextlib.suppress(OSError):
                os.unlink(cwd_file)
        code = proc.returncode
        exit_code = None if timed_out or code is None else (code if code >= 0 else 128 - code)
        return sink.result(exit_code, timed_out=timed_out, notes=notes)

    async def _spawn(self, script: str, output_fd: int) -> asyncio.subprocess.Process:
        """Start ``bash -c script`` in its own session, output into ``output_fd``."""
        try:
            return await asyncio.create_subprocess_exec(
                "bash",
                "-c",
                script,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=output_fd,
                stderr=output_fd,
                cwd=self.cwd,
                env=self._env,
                start_new_session=True,
            )
        except OSError as error:
            raise ToolError(
                f"could not start bash in {self.cwd}: {error.strerror or error}"
            ) from error

    async def _supervise(
        self,
        proc: asyncio.subprocess.Process,
        pgid: int,
        read_fd: int,
        sink: OutputSink,
        timeout: float,
    ) -> tuple[bool, bool]:
        """Pump the output until the command ends; returns (timed out, pipe held open).

        Takes ownership of ``read_fd``. On cancellation the group is killed and
        the cancellation goes on.
        """
        loop = asyncio.get_running_loop()
        pipe = os.fdopen(read_fd, "rb", buffering=0)
        transport: asyncio.BaseTransport | None = None
        try:
            transport, reader = await loop.connect_read_pipe(lambda: PipeReader(sink.feed), pipe)
            timed_out = await self._wait(proc, pgid, timeout)
            held_open = not await self._drain(reader)
            return timed_out, held_open
        except asyncio.CancelledError:
            signal_group(pgid, signal.SIGKILL)
            with contextlib.suppress(asyncio.CancelledError, TimeoutError):
                await asyncio.wait_for(proc.wait(), 1.0)
            raise
        finally:
            if transport is not None:
                transport.close()
            else:
                pipe.close()

    async def _wait(self, proc: asyncio.subprocess.Process, pgid: int, timeout: float) -> bool:
        """Wait for the main shell; on timeout kill its group. True if it timed out."""
        try:
            await asyncio.wait_for(proc.wait(), timeout)
            return False
        except TimeoutError:
            pass
        await self._terminate_group(pgid)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(proc.wait(), 1.0)
        return True

    async def _drain(self, reader: PipeReader) -> bool:
        """Read what is left in the pipe for a short while; False if it stayed open."""
        try:
            await asyncio.wait_for(reader.closed.wait(), self.drain_timeout)
        except TimeoutError:
            return False
        return True

    async def _terminate_group(self, pgid: int) -> None:
        """SIGTERM the group, give it ``kill_grace`` seconds, then SIGKILL what is left."""
        await terminate_group(pgid, self.kill_grace)

    async def _start_job(self, command: str, feed: JobFeed) -> LocalJob:
        """``bash -c command`` in its own session, its output read into ``feed``."""
        read_fd, write_fd = os.pipe()
        try:
            proc = await self._spawn(command, write_fd)
        except BaseException:
            os.close(read_fd)
            raise
        finally:
            os.close(write_fd)
        self._groups.add(proc.pid)
        return LocalJob(
            proc, read_fd, feed, kill_grace=self.kill_grace, drain_timeout=self.drain_timeout
        )

    async def spawn(self, argv: Sequence[str], *, cwd: Path | None = None) -> PipedProcess:
        """Start ``argv`` on the host, in its own session, with the commands' environment;
        ``close`` stops it with the rest (no network confinement: this is the host)."""
        proc = await start_piped(argv, cwd=cwd or self.root, env=self._env, what=argv[0])
        self._groups.add(proc.pid)
        return proc

    async def close(self) -> None:
        """Stop every process group started here that is still running."""
        groups = [pgid for pgid in self._groups if group_alive(pgid)]
        self._groups.clear()
        await asyncio.gather(*(self._terminate_group(pgid) for pgid in groups))
