"""Stop with the process that started us, when it asked for that.

A batch starts one headless ``clover-code`` per task (and ``clover-code
sandbox run`` for its setup and tests), each in its own session so that the
terminal's Ctrl+C reaches only the batch, which stops them itself. If the
batch is killed outright (SIGKILL, a Ray worker torn down, an OOM kill) it
cannot, and its children would run on until their own time limits, holding
model slots and sandboxes. So the batch sets ``CLOVER_EXIT_WITH_PARENT`` to
its pid, and a child that finds it asks Linux for SIGINT when its parent
dies: the same clean stop as Ctrl+C (the sandbox closed, the result written).
The variable is removed at once, so the agent's own commands never see it.
``clover-code web`` ties each tab's app the same way, with SIGTERM (the app
in a browser quits on it).
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys

__all__ = ["ENV", "tie_to_parent"]

ENV = "CLOVER_EXIT_WITH_PARENT"
_PR_SET_PDEATHSIG = 1


def tie_to_parent(sig: signal.Signals = signal.SIGINT) -> None:
    """If ``CLOVER_EXIT_WITH_PARENT`` names our parent, get ``sig`` when it dies
    (Linux; elsewhere nothing happens). A parent already gone is ``sig`` at once."""
    parent = os.environ.pop(ENV, None)
    if parent is None or not sys.platform.startswith("linux"):
        return
    import ctypes  # only when asked: every start of the command passes here

    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, sig, 0, 0, 0)
    if str(os.getppid()) != parent:  # it died before the request took effect
        os.kill(os.getpid(), sig)
