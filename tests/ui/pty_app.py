"""The app in a real pseudo-terminal: every byte it writes is read back, keys and
terminal reports (focus in/out) are written to it as a terminal would."""

from __future__ import annotations

import asyncio
import os
import pty
import signal
import subprocess
import sys
import termios
import time
from collections.abc import Mapping
from pathlib import Path

from tests.waiting import PATIENCE

ROOT = Path(__file__).resolve().parents[2]
FOCUS_OUT = b"\x1b[O"
FOCUS_IN = b"\x1b[I"


class PtyApp:
    """A program (the app, by default) running in a pty of its own; ``output`` is all it
    wrote."""

    def __init__(
        self,
        argv: list[str],
        env: Mapping[str, str],
        size: tuple[int, int],
        *,
        program: list[str] | None = None,
    ) -> None:
        """Run ``program`` (default: ``python -m clover_code``) with ``argv`` in a pty of
        ``size`` (columns, rows)."""
        self.master, slave = pty.openpty()
        columns, rows = size
        termios.tcsetwinsize(slave, (rows, columns))
        self.proc = subprocess.Popen(
            [*([sys.executable, "-m", "clover_code"] if program is None else program), *argv],
            stdin=slave,
            stdout=slave,
            stderr=slave,
            env={**env, "PYTHONPATH": str(ROOT)},
            cwd=ROOT,
            start_new_session=True,
        )
        os.close(slave)
        self.output = b""

    def write(self, data: bytes) -> None:
        """Type ``data`` (keys, or a report the terminal sends)."""
        os.write(self.master, data)

    async def read_until(self, marker: bytes, *, message: str, timeout: float = PATIENCE) -> bytes:
        """Read until ``marker`` has been written (since the start); fails with ``message``."""
        loop = asyncio.get_running_loop()
        deadline = time.monotonic() + timeout
        while marker not in self.output:
            if time.monotonic() > deadline:
                raise AssertionError(
                    f"waited {timeout:g} s for {message}; read: {self.output[-3000:]!r}"
                )
            ready = asyncio.Event()
            loop.add_reader(self.master, ready.set)
            try:
                await asyncio.wait_for(ready.wait(), 0.5)
            except TimeoutError:
                continue
            finally:
                loop.remove_reader(self.master)
            try:
                chunk = os.read(self.master, 65536)
            except OSError as exc:  # the app exited and the pty closed
                raise AssertionError(
                    f"the app ended before {message} ({exc}); read: {self.output[-3000:]!r}"
                ) from None
            self.output += chunk
        return self.output

    def close(self) -> None:
        """Stop the app (its whole process group) and the pty."""
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        os.close(self.master)
