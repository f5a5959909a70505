"""How much a batch task may write: its transcript and log share one byte budget.

A run that loops printing could fill the disk under a batch of hundreds of
tasks; past the budget the task is stopped and recorded as ``output_limit``.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import BinaryIO

CHUNK = 64 * 1024


class OutputBudget:
    """Copies a task's output streams to their files until ``limit`` bytes in all."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.written = 0
        self.exceeded = asyncio.Event()

    async def copy(self, source: asyncio.StreamReader, sink: BinaryIO) -> None:
        """Copy ``source`` into ``sink`` (flushed as it comes) until its end or the budget's."""
        while chunk := await source.read(CHUNK):
            room = max(0, self.limit - self.written)
            if len(chunk) > room:
                self.exceeded.set()  # the rest is drained, so the process cannot block
            if room:
                sink.write(chunk[:room])
                sink.flush()
                self.written += min(room, len(chunk))

    @staticmethod
    def cut_torn_line(path: Path) -> None:
        """Drop a last line cut off by the budget, so every line left is whole JSON."""
        data = path.read_bytes()
        if data and not data.endswith(b"\n"):
            path.write_bytes(data[: data.rfind(b"\n") + 1])
