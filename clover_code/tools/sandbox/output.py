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
"""

from __future__ import annotations

import re
from collections import deque

from clover_code.tools.arguments import human_size

__all__ = ["HeadTailBuffer", "cap_head_tail", "omission_marker", "omitted_bytes"]

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
