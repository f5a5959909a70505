"""Bounded command output: keep the head and the tail, count what is dropped.

Every sandbox collects output through ``HeadTailBuffer`` so that memory stays
bounded whatever a command prints, and the model sees the start (where
commands report what they are doing) and the end (where errors and
summaries are). The marker between them says how much was dropped in bytes
(``[... 512.3 MB omitted ...]``), counted where the output is read (the
sandbox tells the buffer how many bytes each piece came from), so that a
command that printed half a gigabyte is not reported as a few characters.
Capping an already capped text again (the shell tool and the output spill
do) folds the old marker into the new one instead of cutting it away.

``OutputSink`` is where each sandbox puts a command's output as it reads it
(through ``PipeReader`` when it reads a pipe): it decodes, keeps head and
tail, streams live up to a limit, and makes the command's ``ExecResult``.
"""

from __future__ import annotations

import asyncio
import codecs
import logging
import re
import time
from collections import deque
from collections.abc import Callable

from clover_code.tools.arguments import human_size
from clover_code.tools.sandbox.base import ExecResult

__all__ = [
    "HeadTailBuffer",
    "OutputSink",
    "PipeReader",
    "cap_head_tail",
    "omission_marker",
    "omitted_bytes",
]

log = logging.getLogger(__name__)

_UNITS = {"byte": 1, "bytes": 1, "kB": 10**3, "MB": 10**6, "GB": 10**9, "TB": 10**12}
_MARKER = re.compile(r"\n\[\.\.\. ([0-9]+(?:\.[0-9])?) (bytes?|kB|MB|GB|TB) omitted \.\.\.\]\n")
_MARKER_MAX = 40
"""Longest marker text, for looking just past a cut."""


def omission_marker(count: int) -> str:
    """The line that stands in for ``count`` dropped bytes."""
    return f"\n[... {human_size(count)} omitted ...]\n"


def omitted_bytes(text: str) -> int:
    """The bytes the markers in ``text`` stand for (to the precision they show)."""
    return sum(round(float(m[1]) * _UNITS[m[2]]) for m in _MARKER.finditer(text))


def _utf8_len(text: str) -> int:
    return len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))


class HeadTailBuffer:
    """Keeps the first ``limit // 2`` and the last ``limit - limit // 2`` characters
    written to it; memory stays near ``limit`` plus one written piece."""

    def __init__(self, limit: int) -> None:
        if limit < 2:
            raise ValueError("the output limit must be at least 2 characters")
        self._head_limit = limit // 2
        self._tail_limit = limit - self._head_limit
        self._head: list[str] = []
        self._head_size = 0
        self._tail: deque[str] = deque()
        self._tail_size = 0
        self.total = 0
        """Characters written so far."""
        self.total_bytes = 0
        """Bytes the written text came from, as the writers counted them."""

    def write(self, text: str, size: int | None = None) -> None:
        """Append ``text``, decoded from ``size`` bytes (default: its UTF-8 length)."""
        self.total_bytes += _utf8_len(text) if size is None else size
        if not text:
            return
        self.total += len(text)
        room = self._head_limit - self._head_size
        if room > 0:
            part = text[:room]
            self._head.append(part)
            self._head_size += len(part)
            text = text[room:]
            if not text:
                return
        self._tail.append(text)
        self._tail_size += len(text)
        while self._tail and self._tail_size - len(self._tail[0]) >= self._tail_limit:
            self._tail_size -= len(self._tail.popleft())

    @property
    def truncated(self) -> bool:
        """Whether some characters were dropped."""
        return self.total > self._head_limit + self._tail_limit

    def text(self) -> str:
        """The kept output, with a marker saying how many bytes were dropped."""
        head = "".join(self._head)
        tail = "".join(self._tail)
        if len(tail) > self._tail_limit:
            tail = tail[len(tail) - self._tail_limit :]
        if self.total - len(head) - len(tail) <= 0:
            return head + tail
        dropped = self.total_bytes - _utf8_len(head) - _utf8_len(tail)
        return head + omission_marker(max(dropped, 1)) + tail


def cap_head_tail(text: str, limit: int) -> tuple[str, bool]:
    """``text`` cut to about ``limit`` characters, head and tail kept; and whether it was cut.

    Markers of earlier cuts inside the dropped part are counted in the new
    marker (one that straddles the cut is dropped whole)."""
    if len(text) <= limit:
        return text, False
    start, end = limit // 2, len(text) - (limit - limit // 2)
    window = max(0, start - _MARKER_MAX)
    for found in _MARKER.finditer(text, window, min(len(text), end + _MARKER_MAX)):
        if found.start() < end and found.end() > start:
            start, end = min(start, found.start()), max(end, found.end())
    middle = text[start:end]
    dropped = omitted_bytes(middle) + _utf8_len(_MARKER.sub("", middle))
    return text[:start] + omission_marker(max(dropped, 1)) + text[end:], True


class OutputSink:
    """Decodes a command's output, keeps it head + tail, and streams it live up to a
    limit. Made when the command starts; ``result`` ends it."""

    def __init__(
        self, limit: int, stream_limit: int, on_output: Callable[[str], None] | None
    ) -> None:
        self.buffer = HeadTailBuffer(limit)
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._on_output = on_output
        self._stream_left = stream_limit
        self._started = time.monotonic()

    def feed(self, data: bytes, final: bool = False) -> None:
        """Take the next piece of output as read (``final``: no more will come)."""
        text = self._decoder.decode(data, final)
        # Counted here, as read: the marker then says how much the command printed.
        self.buffer.write(text, len(data))
        if not text:
            return
        if self._on_output is None or self._stream_left <= 0:
            return
        piece = text[: self._stream_left]
        self._stream_left -= len(piece)
        if self._stream_left <= 0:
            piece += "\n[... live output stops here; the result keeps the start and the end ...]\n"
        try:
            self._on_output(piece)
        except Exception:
            # A front end's failure must not kill the command; stop streaming to it.
            log.exception("on_output callback failed; live output disabled for this command")
            self._on_output = None

    def result(self, exit_code: int | None, *, timed_out: bool, notes: list[str]) -> ExecResult:
        """The command's result once its output has all been fed: what it printed,
        then the sandbox's ``notes`` to the model, one a line."""
        self.feed(b"", final=True)
        output = self.buffer.text()
        if notes:
            output += ("\n" if output and not output.endswith("\n") else "") + "\n".join(notes)
            output += "\n"
        return ExecResult(
            exit_code=exit_code,
            output=output,
            truncated=self.buffer.truncated,
            timed_out=timed_out,
            duration=time.monotonic() - self._started,
        )


class PipeReader(asyncio.Protocol):
    """Hands each piece read from a command's output pipe to ``feed``; ``closed`` is set
    once every writer has closed it."""

    def __init__(self, feed: Callable[[bytes], None]) -> None:
        self._feed = feed
        self.closed = asyncio.Event()

    def data_received(self, data: bytes) -> None:
        self._feed(data)

    def eof_received(self) -> bool | None:
        self.closed.set()
        return None

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed.set()
