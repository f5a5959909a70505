"""Finding this test run's processes: those whose command line holds a unique mark.

Other test runs share the machine, so a check that nothing was left running
looks only for processes with a mark its own test chose (a ``sleep`` of an
unusual length, a unique directory)."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["alive", "marked"]


def alive(pid: int) -> bool:
    """Whether ``pid`` is a live process (a zombie counts as dead)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")


def marked(mark: str) -> list[int]:
    """The live processes whose command line holds ``mark``."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            cmdline = Path(f"/proc/{name}/cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if mark in cmdline and alive(int(name)):
            found.append(int(name))
    return found
