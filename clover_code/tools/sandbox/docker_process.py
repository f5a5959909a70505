"""``ExecProcess``: a long-lived program in the Docker sandbox's container, over ``docker exec``.

``DockerSandbox.spawn`` creates an exec of the runner's ``--exec`` mode
(``runner.py``: the setuid filter when commands run as uid 0, then the
program), as the commands' user, with their environment and a marker that
``runner.py --kill`` finds it by. Starting the exec hijacks its HTTP
connection, as attaching to the container does (``docker_link``): what is
written is the program's stdin; what is read is its stdout and stderr in
Docker's 8-byte-header frames. A thread reads them: stdout goes to an
asyncio ``StreamReader``, stderr to a bounded tail. The program shares the
container's confinement (no capabilities, no new privileges, read-only
root, the read-only control files, the container's network: none unless
the sandbox has it) and goes with the container.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import struct
import threading
from typing import Any

from clover_code.tools.sandbox.process import STDERR_TAIL

__all__ = ["ExecProcess", "open_exec_stream"]

_HEADER = struct.Struct(">BxxxL")


def open_exec_stream(api: Any, exec_id: str) -> tuple[Any, Any, socket.socket]:
    """Start a created exec; returns (response, buffered reader, socket) of its stream."""
    response = api._post_json(
        api._url("/exec/{0}/start", exec_id),
        headers={"Connection": "Upgrade", "Upgrade": "tcp"},
        data={"Tty": False, "Detach": False},
        stream=True,
    )
    api._raise_for_status(response)
    reader = response.raw._fp.fp
    sock = getattr(reader.raw, "_sock", None)
    if not isinstance(sock, socket.socket):
        response.close()
        raise OSError("this Docker connection does not expose a socket to stream over")
    sock.settimeout(None)
    return response, reader, sock


class ExecProcess:
    """A program started with ``docker exec`` (``SandboxProcess``)."""

    def __init__(
        self,
        api: Any,
        exec_id: str,
        stream: tuple[Any, Any, socket.socket],
        kill: Any,
    ) -> None:
        self._api = api
        self._exec_id = exec_id
        self._response, self._reader, self._sock = stream
        self._kill_from_outside = kill
        """Kills the program's processes (the runner's ``--kill`` through another exec)."""
        self._loop = asyncio.get_running_loop()
        self.stdout = asyncio.StreamReader(limit=2**20, loop=self._loop)
        self._stderr = b""
        self._ended = asyncio.Event()
        self._code: int | None = None
        self._write_lock = asyncio.Lock()
        threading.Thread(target=self._read_loop, name="clover-exec", daemon=True).start()

    @property
    def returncode(self) -> int | None:
        """Its exit status once it ended (from Docker; None while it runs)."""
        return self._code

    def stderr_tail(self) -> str:
        """The end of its stderr so far."""
        return self._stderr.decode("utf-8", "replace")[-STDERR_TAIL:]

    def _read_loop(self) -> None:
        try:
            while True:
                head = self._reader.read(_HEADER.size)
                if len(head) < _HEADER.size:
                    break
                kind, size = _HEADER.unpack(head)
                body = self._reader.read(size) if size else b""
                if len(body) < size:
                    break
                if kind == 2:
                    self._stderr = (self._stderr + body)[-STDERR_TAIL * 4 :]
                elif kind == 1:
                    self._loop.call_soon_threadsafe(self.stdout.feed_data, body)
        except (OSError, ValueError):
            pass
        code = self._exit_code()
        with contextlib.suppress(RuntimeError):  # the loop is closed: nobody is waiting
            self._loop.call_soon_threadsafe(self._finish, code)

    def _exit_code(self) -> int | None:
        with contextlib.suppress(Exception):
            info = self._api.exec_inspect(self._exec_id)
            if not info.get("Running"):
                code = info.get("ExitCode")
                return int(code) if code is not None else None
        return None

    def _finish(self, code: int | None) -> None:
        self._code = code
        self.stdout.feed_eof()
        self._ended.set()

    async def write(self, data: bytes) -> None:
        """Write to its stdin."""
        if self._ended.is_set():
            raise BrokenPipeError("the program has ended")
        async with self._write_lock:
            await asyncio.to_thread(self._sock.sendall, data)

    async def wait(self) -> int | None:
        """Wait until its stream ends."""
        await self._ended.wait()
        return self._code

    async def kill(self) -> None:
        """Kill it inside the container, then close the stream."""
        if not self._ended.is_set():
            with contextlib.suppress(Exception):
                await asyncio.wait_for(asyncio.to_thread(self._kill_from_outside), 5.0)
        for close in (lambda: self._sock.shutdown(socket.SHUT_RDWR), self._response.close):
            with contextlib.suppress(Exception):
                close()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._ended.wait(), 5.0)
