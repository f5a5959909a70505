"""Signalling and reaping the processes we started.

Standard library only, and nothing newer than Python 3.9: the Docker
sandbox's command runner imports this module inside the container, on the
image's own Python (``docker_setup`` mounts it there beside the runner).
"""

from __future__ import annotations

import os
from collections.abc import Iterator

__all__ = ["exited_children", "signal_group"]


def signal_group(pgid: int, sig: int) -> bool:
    """Send ``sig`` to a process group; False when the group no longer exists."""
    try:
        os.killpg(pgid, sig)
    except ProcessLookupError:
        return False
    except PermissionError:
        # A member changed its credentials; the group is not ours to signal.
        return False
    return True


def exited_children() -> Iterator[tuple[int, int]]:
    """Reap every child that has exited, without waiting for the others: each one's pid
    and exit code (as ``Popen.returncode`` has it: minus the signal that killed it)."""
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        yield pid, os.waitstatus_to_exitcode(status)
