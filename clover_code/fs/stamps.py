"""What was worked out from some files, remembered while those files stay as they were.

A file's stamp is what ``lstat`` says of it: inode, size, modification and
change times (None for a missing file). Every write gives a file a new change
time, which no program can set back, and a file put in another's place has
another inode; so while every stamp is the same, so is every file.

Kernel timestamps advance in steps (a clock tick, or a second or two on some
filesystems), and two writes within one step can leave the same stamp. Files
whose times are that close to the moment they are stamped are not trusted:
nothing is remembered from them until they have settled.
"""

from __future__ import annotations

import os
import stat
import time
from collections.abc import Hashable, Sequence
from pathlib import Path
from typing import Generic, TypeVar

__all__ = ["Remembered", "Stamps", "stamps"]

T = TypeVar("T")

Stamps = tuple[tuple[int, int, int, int] | None, ...]
"""One stamp per file, in the order the files were given."""

SETTLE_NS = 50_000_000
"""Files changed less than this long ago are not trusted (many clock ticks at any HZ)."""

COARSE_SETTLE_NS = 3_000_000_000
"""The same on a filesystem that keeps whole seconds only (its times end in zero nanoseconds)."""


def stamps(paths: Sequence[Path]) -> Stamps | None:
    """The stamps of ``paths``, or None when one cannot be trusted: a symbolic link (what
    it points to could change unseen), a file that is not readable as one, or one changed
    too recently (see the module's docstring)."""
    now = time.time_ns()
    found: list[tuple[int, int, int, int] | None] = []
    for path in paths:
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            found.append(None)
            continue
        except OSError:
            return None
        if stat.S_ISLNK(st.st_mode):
            return None
        newest = max(st.st_mtime_ns, st.st_ctime_ns)
        coarse = st.st_mtime_ns % 1_000_000_000 == 0 and st.st_ctime_ns % 1_000_000_000 == 0
        if now - newest < (COARSE_SETTLE_NS if coarse else SETTLE_NS):
            return None
        found.append((st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns))
    return tuple(found)


class Remembered(Generic[T]):
    """Values by key, each with the stamps of the files it was worked out from; the
    ``size`` most recently stored are kept."""

    def __init__(self, size: int) -> None:
        self._size = size
        self._values: dict[Hashable, tuple[Stamps, T]] = {}

    def get(self, key: Hashable, now: Stamps) -> T | None:
        """The value stored for ``key`` if its files' stamps are ``now`` still, else None."""
        entry = self._values.get(key)
        if entry is None or entry[0] != now:
            return None
        return entry[1]

    def put(self, key: Hashable, taken: Stamps, value: T) -> None:
        """Remember ``value`` for ``key``, worked out from files stamped ``taken`` (stamped
        before they were read, so a change while reading is seen next time)."""
        self._values.pop(key, None)
        self._values[key] = (taken, value)
        while len(self._values) > self._size:
            del self._values[next(iter(self._values))]

    def clear(self) -> None:
        """Forget everything."""
        self._values.clear()
