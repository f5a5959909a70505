"""Finding and killing a command's processes, for the runner inside the container.

Part of the runner (``runner.py``): it runs on the image's Python, so it uses
the standard library only, and ``docker_setup`` mounts it beside the runner.
A command's processes are found by the marker in their environment (even
those that left its process group) or by the output pipe they hold open.
"""

from __future__ import annotations

import contextlib
import os
import signal
import stat
from collections.abc import Iterator

__all__ = ["MARKER", "kill", "kill_holders", "kill_marked", "pids"]

MARKER = "CLOVER_SANDBOX_CMD"
"""The environment variable that carries a command's token into all its processes."""


def pids() -> Iterator[int]:
    """The ids of every process but this one."""
    for name in os.listdir("/proc"):
        if name.isdigit() and int(name) != os.getpid():
            yield int(name)


def kill(pid: int) -> None:
    """SIGKILL ``pid``; gone already is fine."""
    with contextlib.suppress(OSError):
        os.kill(pid, signal.SIGKILL)


def kill_marked(token: str) -> None:
    """SIGKILL every process whose environment carries ``token``, until none is left."""
    needle = f"{MARKER}={token}".encode()
    for _ in range(50):
        found = False
        for pid in pids():
            try:
                with open(f"/proc/{pid}/environ", "rb") as fh:
                    env = fh.read().split(b"\0")
            except OSError:
                continue
            if needle in env:
                kill(pid)
                found = True
        if not found:
            return


def kill_holders(inode: int) -> int:
    """SIGKILL every process with a descriptor on the pipe ``inode``; returns how many."""
    count = 0
    for pid in pids():
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            continue
        for fd in fds:
            try:
                st = os.stat(f"/proc/{pid}/fd/{fd}")
            except OSError:
                continue
            if stat.S_ISFIFO(st.st_mode) and st.st_ino == inode:
                kill(pid)
                count += 1
                break
    return count
