"""The runner's setuid filter: installed on itself before any command, or nothing runs.

Part of the runner (``runner.py``): it runs on the image's Python, so it uses
the standard library only, and ``docker_setup`` mounts it beside the runner.
``lock_setuid`` installs the seccomp program of ``seccomp.py`` on the runner
(every command inherits it) and checks that a setuid ``chmod`` is refused;
``REFUSED`` is the sentence the runner answers with when it must and cannot.
"""

from __future__ import annotations

import os
import tempfile

__all__ = ["REFUSED", "lock_setuid"]

REFUSED = (
    "the Docker sandbox will not run commands as root: it could not install its filter "
    "against setuid files ({why}); run clover-code as a regular user, or on a workspace "
    "a regular user owns."
)


def lock_setuid(path: str | None) -> str | None:
    """Install the seccomp filter at ``path`` on this process; children inherit it.

    Returns why that failed (a phrase), or None when it holds or, not being
    root and given no filter, the runner needs none.
    """
    if path is None:
        return "no filter was given" if 0 in (os.getuid(), os.geteuid()) else None
    try:
        import ctypes

        with open(path, "rb") as fh:
            program = fh.read()
        if not program or len(program) % 8 or len(program) > 8 * 4096:
            return f"{path} is not a seccomp program"

        class Prog(ctypes.Structure):  # struct sock_fprog
            _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]

        code = ctypes.create_string_buffer(program, len(program))
        prog = Prog(len(program) // 8, ctypes.cast(code, ctypes.c_void_p))
        prctl = ctypes.CDLL(None, use_errno=True).prctl
        one, zero = ctypes.c_ulong(1), ctypes.c_ulong(0)
        # PR_SET_NO_NEW_PRIVS (no-new-privileges set it already), then
        # PR_SET_SECCOMP with SECCOMP_MODE_FILTER.
        if prctl(38, one, zero, zero, zero) or prctl(
            22, ctypes.c_ulong(2), ctypes.byref(prog), zero, zero
        ):
            return f"prctl: {os.strerror(ctypes.get_errno())}"
    except (ImportError, OSError, AttributeError) as exc:
        return f"{type(exc).__name__}: {exc}"
    try:  # check that it holds
        fd, probe = tempfile.mkstemp(prefix="clover-setuid-probe-")
    except OSError as exc:
        return f"cannot check it: {exc.strerror}"
    try:
        os.fchmod(fd, 0o4700)
    except PermissionError:
        return None
    finally:
        os.close(fd)
        os.unlink(probe)
    return "a setuid chmod still succeeded with it"
