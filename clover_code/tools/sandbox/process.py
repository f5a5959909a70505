"""``PipedProcess``: a long-lived program with pipes, as the host and bubblewrap start it.

What ``Sandbox.spawn`` returns where the sandbox is a local process tree: the
program (or bwrap around it) runs in a session of its own, so ``kill``
reaches everything it started through the process group; stderr is read
in the background into a bounded tail, so a chatty server never blocks on
a full pipe.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from clover_code.errors import ToolError
from clover_code.proc.children import signal_group

__all__ = ["STDERR_TAIL", "PipedProcess", "start_piped"]

STDERR_TAIL = 4000
"""Characters of a program's stderr kept for saying why it ended."""


class PipedProcess:
    """A running program with its stdin and stdout as pipes (``SandboxProcess``)."""

    def __init__(
        self, proc: asyncio.subprocess.Process, on_end: Callable[[], None] | None = None
    ) -> None:
        assert proc.stdout is not None and proc.stdin is not None and proc.stderr is not None
        self._proc = proc
        self.stdout: asyncio.StreamReader = proc.stdout
        self._stdin = proc.stdin
        self._stderr = b""
        self._on_end = on_end
        self._drain = asyncio.get_running_loop().create_task(self._read_stderr(proc.stderr))

    @property
    def pid(self) -> int:
        """The process id of the program (its group's id too)."""
        return self._proc.pid

    @property
    def returncode(self) -> int | None:
        """Its exit status once it ended."""
        return self._proc.returncode

    def stderr_tail(self) -> str:
        """The end of its stderr so far."""
        return self._stderr.decode("utf-8", "replace")[-STDERR_TAIL:]

    async def _read_stderr(self, stream: asyncio.StreamReader) -> None:
        while chunk := await stream.read(65536):
            self._stderr = (self._stderr + chunk)[-STDERR_TAIL * 4 :]

    async def write(self, data: bytes) -> None:
        """Write to its stdin."""
        if self._stdin.is_closing():
            raise BrokenPipeError("the program's stdin is closed")
        self._stdin.write(data)
        await self._stdin.drain()

    async def wait(self) -> int | None:
        """Wait until it ends."""
        code = await self._proc.wait()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await asyncio.wait_for(asyncio.shield(self._drain), 0.5)
        self._ended()
        return code

    async def kill(self) -> None:
        """SIGKILL its whole process group and reap it."""
        signal_group(self._proc.pid, signal.SIGKILL)
        with contextlib.suppress(ProcessLookupError):
            self._proc.kill()
        self._stdin.close()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._proc.wait(), 5.0)
        self._drain.cancel()
        self._ended()

    def _ended(self) -> None:
        on_end, self._on_end = self._on_end, None
        if on_end is not None:
            on_end()


async def start_piped(
    argv: Sequence[str],
    *,
    cwd: Path | None,
    env: dict[str, str],
    what: str,
    on_end: Callable[[], None] | None = None,
    **extra: Any,
) -> PipedProcess:
    """Start ``argv`` in a new session with piped stdin, stdout and stderr.

    ``what`` names the starter in the error (``bubblewrap``, the program);
    ``extra`` goes to ``create_subprocess_exec`` (user, group, pass_fds).
    """
    try:
        proc = await asyncio.create_subprocess_exec(
            *argv,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            cwd=cwd,
            env=env,
            start_new_session=True,
            limit=2**20,
            **extra,
        )
    except OSError as exc:
        if on_end is not None:
            on_end()
        raise ToolError(f"{what} could not start ({exc.strerror or exc}).") from None
    return PipedProcess(proc, on_end)
