"""The job's credentials leave every environment before the agent starts.

``/proc/<pid>/environ`` shows the environment a process was *started* with,
whatever it removes from ``os.environ`` later, and the agent's shell (on the
host with ``sandbox: none``) can read it for every process of its user. So
``clover-code github``, started with ``GITHUB_TOKEN`` and the ``ACTIONS_*``
credentials in its environment, starts itself again (``execve``, same pid)
without them: the credentials travel through an inherited pipe, read once
and closed, and from then on live only in this process's memory, which it
marks non-dumpable (no other process of the user may read it). The agent,
a child started after that, inherits neither.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
from collections.abc import Mapping

from clover_code.errors import UsageError
from clover_code.redact import github_credential

__all__ = ["HELD_FD", "hold_credentials", "take_held", "without_credentials"]

HELD_FD = "CLOVER_GITHUB_HELD_FD"
"""The variable naming the pipe the credentials come back through after the restart."""

_PR_SET_DUMPABLE = 4
_PIPE_LIMIT = 60_000
"""What a pipe takes without a reader (Linux: 64 KiB); the restart writes before it execs."""


def without_credentials(env: Mapping[str, str], token: str) -> dict[str, str]:
    """``env`` without the GitHub token under any name and the Actions credentials."""
    return {
        name: value
        for name, value in env.items()
        if not github_credential(name) and not (token and token in value)
    }


def take_held() -> dict[str, str]:
    """After the restart: the credential variables, read from the pipe ``HELD_FD``
    names (which is closed); before it, nothing."""
    fd = os.environ.pop(HELD_FD, None)
    if fd is None:
        return {}
    with os.fdopen(int(fd), "rb") as pipe:
        held: dict[str, str] = json.loads(pipe.read())
    return held


def hold_credentials(env: Mapping[str, str], token: str) -> dict[str, str]:
    """The credential variables of ``env`` (the job's, ``take_held``'s included), held in
    memory only. Never returns while ``os.environ`` still has one of them: the process
    starts again without them (the same pid, the same arguments), and this is called
    again there.
    """
    kept = without_credentials(env, token)
    held = {name: value for name, value in env.items() if name not in kept}
    if not any(name in os.environ for name in held):
        _not_dumpable()
        return held
    _restart_without(held)
    raise AssertionError("unreachable: execve returned")  # pragma: no cover


def _restart_without(held: dict[str, str]) -> None:
    payload = json.dumps(held).encode()
    if len(payload) > _PIPE_LIMIT:
        raise UsageError(
            f"the job's credential variables ({', '.join(sorted(held))}) are too large to hold; "
            "unset the ones clover-code github does not need."
        )
    read_end, write_end = os.pipe()
    os.write(write_end, payload)
    os.close(write_end)
    os.set_inheritable(read_end, True)
    env = {k: v for k, v in os.environ.items() if k not in held}
    env[HELD_FD] = str(read_end)
    sys.stdout.flush()
    sys.stderr.flush()
    os.execve(sys.executable, [sys.executable, *sys.orig_argv[1:]], env)


def _not_dumpable() -> None:
    """Keep other processes of the user out of this one's memory and /proc files (Linux)."""
    if not sys.platform.startswith("linux"):
        return
    import ctypes

    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0)
