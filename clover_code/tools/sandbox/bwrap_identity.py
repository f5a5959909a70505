"""Who a ``BwrapSandbox`` command runs as, and whether bubblewrap works here.

- ``identity_args``: the namespace and identity flags for commands that write
  as a given host user (host root gets a user namespace of its own in which
  it is ``INNER_ID`` and cannot make another one);
- ``with_seccomp``: the setuid filter (``seccomp.py``) added to a bwrap
  command line when commands write as host root or its group;
- ``bwrap_problem``: one phrase saying why bubblewrap cannot sandbox here, by
  running the same flags on ``true``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from typing import Any

from clover_code.tools.sandbox.policy import INNER_ID, needs_setuid_filter, runs_as_root
from clover_code.tools.sandbox.seccomp import setuid_filter_fd

__all__ = ["bwrap_problem", "identity_args", "with_seccomp"]


def identity_args(user: tuple[int, int]) -> list[str]:
    """The namespace and identity flags for commands that write as host ``user``.

    A regular user gets every namespace bubblewrap makes for it (its user
    namespace maps the user to itself). Host root gets an explicit user
    namespace in which it is ``INNER_ID`` and cannot make another one.
    """
    args = ["--unshare-all", "--die-with-parent", "--new-session", "--cap-drop", "ALL"]
    if runs_as_root(user) and os.getuid() == 0:
        args += ["--unshare-user", "--disable-userns"]
        args += ["--uid", str(INNER_ID), "--gid", str(INNER_ID)]
    return args


def with_seccomp(argv: list[str], user: tuple[int, int]) -> tuple[list[str], tuple[int, ...]]:
    """``argv`` with the setuid filter (``seccomp.py``) when commands write as host root
    or its group, and the file descriptors to pass to bwrap (close them once it started)."""
    if not (needs_setuid_filter(user) and os.getuid() == 0):
        return argv, ()
    fd = setuid_filter_fd()
    if fd is None:
        return argv, ()
    return [argv[0], "--seccomp", str(fd), *argv[1:]], (fd,)


def bwrap_problem(bwrap: str = "bwrap", user: tuple[int, int] | None = None) -> str | None:
    """Why bubblewrap cannot sandbox here (one phrase), or None when it works.

    ``user`` is the uid:gid it will run as (root only can switch to it).
    """
    path = shutil.which(bwrap)
    if path is None:
        return "bubblewrap (bwrap) is not installed"
    probe = [path, *identity_args(user or (os.getuid(), os.getgid()))]
    probe += ["--ro-bind", "/", "/", "--proc", "/proc", "true"]
    extra: dict[str, Any] = {}
    if user is not None and os.getuid() == 0 and not runs_as_root(user):
        extra = {"user": user[0], "group": user[1], "extra_groups": []}
    probe, fds = with_seccomp(probe, user or (os.getuid(), os.getgid()))
    try:
        proc = subprocess.run(
            probe, capture_output=True, text=True, timeout=10, check=False, pass_fds=fds, **extra
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"bubblewrap does not run ({exc})"
    finally:
        for fd in fds:
            os.close(fd)
    if proc.returncode != 0:
        why = proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else "no message"
        if "disable-userns" in why:
            return "this bubblewrap is too old to run commands for root unprivileged (0.8 needed)"
        return f"bubblewrap cannot create its namespaces here ({why})"
    return None
