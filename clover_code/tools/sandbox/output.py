"""Bounded command output: keep the head and the tail, count what is dropped.

Every sandbox collects output through ``HeadTailBuffer`` so that memory stays
bounded whatever a command prints, and the model sees the start (where
commands report what they are doing) and the end (where errors and
summaries are).
"""

from __future__ import annotations

from collections import deque

__all__ = ["HeadTailBuffer", "cap_head_tail", "omission_marker"]


def omission_marker(count: int) -> str:
    """The line that stands in for ``count`` dropped characters."""
    return f"\n[... {count} characters omitted ...]\n"


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

    def write(self, text: str) -> None:
        """Append ``text``."""
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
        """The kept output, with a marker where characters were dropped."""
        head = "".join(self._head)
        tail = "".join(self._tail)
        if len(tail) > self._tail_limit:
            tail = tail[len(tail) - self._tail_limit :]
        omitted = self.total - len(head) - len(tail)
        if omitted <= 0:
            return head + tail
        return head + omission_marker(omitted) + tail


def cap_head_tail(text: str, limit: int) -> tuple[str, bool]:
    """``text`` cut to about ``limit`` characters, head and tail kept; and whether it was cut."""
    if len(text) <= limit:
        return text, False
    buffer = HeadTailBuffer(limit)
    buffer.write(text)
    return buffer.text(), True
