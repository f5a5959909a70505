"""How a batch starts ``clover-code`` for a task: a fresh interpreter each time
(``ColdLauncher``), or a fork of the warm process of ``clover_code.batch.zygote``
(``WarmLauncher``), which spares each task the interpreter's start and the
loading of clover-code. Both give a process its own session (the batch
signals its group), stdin from /dev/null, and either pipes for its stdout and
stderr or one log file for both; both ask it to stop when the batch dies.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import socket
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import BinaryIO, Protocol

from clover_code.proc.parent_tie import ENV

log = logging.getLogger(__name__)

READY_TIMEOUT_S = 60.0
"""How long the warm process may take to load clover-code before the batch goes cold."""

MAX_MESSAGE = 1 << 20


def child_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment of a task's processes: ours and ``extra`` (secrets such as the
    API key travel here, never on a command line that ``ps`` shows), plus the request
    to stop when this batch dies (``clover_code.proc.parent_tie``)."""
    return {**os.environ, **(extra or {}), ENV: str(os.getpid())}


class Proc(Protocol):
    """What the batch needs of a started process (``asyncio.subprocess.Process`` has it)."""

    @property
    def pid(self) -> int: ...

    @property
    def returncode(self) -> int | None: ...

    @property
    def stdout(self) -> asyncio.StreamReader | None: ...

    @property
    def stderr(self) -> asyncio.StreamReader | None: ...

    async def wait(self) -> int: ...


class Launcher(Protocol):
    """Starts ``clover-code ARGV``."""

    async def start(self, argv: list[str], cwd: Path, output: BinaryIO | None) -> Proc:
        """``output`` None: stdout and stderr are pipes; else both go to ``output``."""
        ...


class ColdLauncher:
    """A new interpreter per process (``python -P -m clover_code``)."""

    def __init__(self, env: Mapping[str, str] | None = None) -> None:
        self.env = dict(env or {})

    async def start(self, argv: list[str], cwd: Path, output: BinaryIO | None) -> Proc:
        """See ``Launcher.start``."""
        pipe = asyncio.subprocess.PIPE
        return await asyncio.create_subprocess_exec(
            sys.executable,
            "-P",  # -m would put cwd (a workspace) first on sys.path, shadowing our modules
            "-m",
            "clover_code",
            *argv,
            cwd=cwd,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=pipe if output is None else output,
            stderr=pipe if output is None else asyncio.subprocess.STDOUT,
            env=child_env(self.env),
            start_new_session=True,  # Ctrl+C reaches the batch, which stops the tasks itself
        )


class WarmProcess:
    """A copy of the warm process, running ``clover-code ARGV``."""

    def __init__(
        self,
        pid: int,
        exited: asyncio.Future[int],
        stdout: asyncio.StreamReader | None,
        stderr: asyncio.StreamReader | None,
    ) -> None:
        self.pid = pid
        self._exited = exited
        self.stdout = stdout
        self.stderr = stderr

    @property
    def returncode(self) -> int | None:
        """Its exit status once it ended (negative: the signal that ended it)."""
        return self._exited.result() if self._exited.done() else None

    async def wait(self) -> int:
        """Its exit status, when it ends (cancelling the wait leaves it running)."""
        return await asyncio.shield(self._exited)


async def _pipe_reader(loop: asyncio.AbstractEventLoop, fd: int) -> asyncio.StreamReader:
    reader = asyncio.StreamReader(limit=2**20)
    protocol = asyncio.StreamReaderProtocol(reader)
    await loop.connect_read_pipe(lambda: protocol, os.fdopen(fd, "rb", buffering=0))
    return reader


class WarmLauncher:
    """Forks of one warm process (``clover_code.batch.zygote``); see ``open``."""

    def __init__(
        self,
        sock: socket.socket,
        server: asyncio.subprocess.Process,
        env: Mapping[str, str] | None = None,
    ) -> None:
        self._sock = sock
        self._server = server
        self._lock = asyncio.Lock()
        self._pending: asyncio.Future[int] | None = None
        self._exits: dict[int, asyncio.Future[int]] = {}
        self._cold = ColdLauncher(env)
        self._reader = asyncio.ensure_future(self._read())

    @classmethod
    async def open(cls, env: Mapping[str, str] | None = None) -> WarmLauncher | None:
        """Start the warm process (its copies get ``env`` added to their environment);
        None (and the batch goes cold) when it cannot."""
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            server = await asyncio.create_subprocess_exec(
                sys.executable,
                "-P",
                "-m",
                "clover_code.batch.zygote",
                str(theirs.fileno()),
                pass_fds=(theirs.fileno(),),
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.DEVNULL,
                stderr=asyncio.subprocess.DEVNULL,
                env=child_env(),
                start_new_session=True,
            )
        except OSError as exc:
            log.warning("no warm start: %s", exc)
            ours.close()
            return None
        finally:
            theirs.close()
        ours.setblocking(False)
        loop = asyncio.get_running_loop()
        try:
            ready = await asyncio.wait_for(loop.sock_recv(ours, MAX_MESSAGE), READY_TIMEOUT_S)
        except (TimeoutError, OSError):
            ready = b""
        if ready != b'{"ready": true}':
            log.warning("no warm start: the warm process did not start")
            ours.close()
            with contextlib.suppress(ProcessLookupError):
                server.kill()
            await server.wait()
            return None
        return cls(ours, server, env)

    async def start(self, argv: list[str], cwd: Path, output: BinaryIO | None) -> Proc:
        """See ``Launcher.start``; cold when the warm process has gone."""
        if self._reader.done():
            return await self._cold.start(argv, cwd, output)
        loop = asyncio.get_running_loop()
        readers: list[asyncio.StreamReader | None] = [None, None]
        ours: list[int] = []
        theirs: list[int] = [os.open(os.devnull, os.O_RDONLY)]
        try:
            if output is None:
                for _ in range(2):
                    r, w = os.pipe()
                    ours.append(r)
                    theirs.append(w)
            else:
                theirs += [os.dup(output.fileno()), os.dup(output.fileno())]
            env = child_env(self._cold.env)
            request = json.dumps({"argv": argv, "cwd": str(cwd), "env": env})
            async with self._lock:
                self._pending = loop.create_future()
                socket.send_fds(self._sock, [request.encode()], theirs)
                pid = await self._pending
        except (OSError, ConnectionError):
            for fd in ours:
                os.close(fd)
            return await self._cold.start(argv, cwd, output)
        finally:
            for fd in theirs:
                os.close(fd)
        for i, fd in enumerate(ours):
            readers[i] = await _pipe_reader(loop, fd)
        return WarmProcess(pid, self._exit_of(pid), readers[0], readers[1])

    def _exit_of(self, pid: int) -> asyncio.Future[int]:
        if pid not in self._exits:
            self._exits[pid] = asyncio.get_running_loop().create_future()
        return self._exits[pid]

    async def _read(self) -> None:
        loop = asyncio.get_running_loop()
        try:
            while message := await loop.sock_recv(self._sock, MAX_MESSAGE):
                data = json.loads(message)
                if "pid" in data and self._pending is not None:
                    self._exit_of(data["pid"])
                    self._pending.set_result(data["pid"])
                    self._pending = None
                elif "exit" in data:
                    done = self._exit_of(data["exit"])
                    if not done.done():
                        done.set_result(int(data["code"]))
        except (OSError, ValueError) as exc:
            log.warning("the warm process stopped answering: %s", exc)
        # Gone: its copies got SIGINT with it (parent_tie); their status is unknown.
        gone = ConnectionError("the warm process ended")
        if self._pending is not None and not self._pending.done():
            self._pending.set_exception(gone)
        for future in self._exits.values():
            if not future.done():
                future.set_result(1)

    async def aclose(self) -> None:
        """End the warm process (after the batch's tasks ended)."""
        self._reader.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._reader
        self._sock.close()  # it reads the end and exits
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._server.wait(), 10.0)
        if self._server.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                self._server.kill()
            await self._server.wait()
