"""A seccomp filter that stops sandboxed commands from making setuid or setgid files.

Used by both sandboxes when commands write as host root (a root-owned
workspace with clover-code as root): a file they create in the workspace is
owned by root on the host, and any owner may set the setuid bit on their own
file, so without this a command could leave a setuid-root program for another
local user to run. bubblewrap gets it with ``--seccomp``; Docker mounts it
into the container, where the runner (``runner.py``) installs it on itself
before it starts any command, on top of Docker's default profile (filters
stack: each call must pass all of them), or refuses to run commands.

The filter refuses (EPERM) a mode with S_ISUID or S_ISGID in
``chmod``/``fchmod``/``fchmodat``/``fchmodat2`` and in the calls that create
files (``open``/``openat``/``creat`` with O_CREAT or O_TMPFILE, ``mknod``);
``openat2`` and ``io_uring_setup`` (whose mode bits it cannot see) and other
ABIs (i386, x32, arm32) get ENOSYS. Everything else is allowed.

``setuid_filter()`` returns the compiled classic-BPF program for the running
architecture (x86_64 or aarch64) in the form ``bwrap --seccomp FD`` reads
(an array of ``struct sock_filter``, what ``prctl(PR_SET_SECCOMP)`` takes
too), or None on another architecture.
"""

from __future__ import annotations

import errno
import os
import platform
import struct

__all__ = ["setuid_filter", "setuid_filter_fd"]

_LD_ABS = 0x20  # BPF_LD | BPF_W | BPF_ABS
_JEQ = 0x15  # BPF_JMP | BPF_JEQ | BPF_K
_JGE = 0x35  # BPF_JMP | BPF_JGE | BPF_K
_JSET = 0x45  # BPF_JMP | BPF_JSET | BPF_K
_RET = 0x06  # BPF_RET | BPF_K

_ALLOW = 0x7FFF0000
_EPERM = 0x00050000 | errno.EPERM
_ENOSYS = 0x00050000 | errno.ENOSYS

_NR, _ARCH = 0, 4


def _arg(index: int) -> int:
    """Offset of the low 32 bits of syscall argument ``index`` (little endian)."""
    return 16 + 8 * index


_SPECIAL_BITS = 0o6000  # S_ISUID | S_ISGID
_CREATES = 0o100 | 0o20000000  # O_CREAT | __O_TMPFILE (same on x86_64 and aarch64)

# Per architecture: audit arch, {syscall: (flags arg or None, mode arg)}, refused syscalls.
_TABLES: dict[str, tuple[int, dict[int, tuple[int | None, int]], tuple[int, ...], bool]] = {
    "x86_64": (
        0xC000003E,
        {
            90: (None, 1),  # chmod
            91: (None, 1),  # fchmod
            268: (None, 2),  # fchmodat
            452: (None, 2),  # fchmodat2
            2: (1, 2),  # open
            257: (2, 3),  # openat
            85: (None, 1),  # creat
            133: (None, 1),  # mknod
            259: (None, 2),  # mknodat
        },
        (437, 425),  # openat2, io_uring_setup
        True,  # x32 syscalls share the arch: refuse them by number
    ),
    "aarch64": (
        0xC00000B7,
        {
            52: (None, 1),  # fchmod
            53: (None, 2),  # fchmodat
            452: (None, 2),  # fchmodat2
            56: (2, 3),  # openat
            33: (None, 2),  # mknodat
        },
        (437, 425),
        False,
    ),
}


def _insn(code: int, k: int, jt: int = 0, jf: int = 0) -> bytes:
    return struct.pack("=HBBI", code, jt, jf, k)


def setuid_filter(machine: str | None = None) -> bytes | None:
    """The filter for ``machine`` (default: this one), or None when not supported."""
    name = {"amd64": "x86_64", "arm64": "aarch64"}.get(
        machine or platform.machine(), machine or platform.machine()
    )
    if name not in _TABLES:
        return None
    arch, rules, refused, x32 = _TABLES[name]
    prog = [_insn(_LD_ABS, _ARCH), _insn(_JEQ, arch, jt=1), _insn(_RET, _ENOSYS)]
    if x32:
        prog += [_insn(_LD_ABS, _NR), _insn(_JGE, 0x40000000, jf=1), _insn(_RET, _ENOSYS)]
    for nr in refused:
        prog += [_insn(_LD_ABS, _NR), _insn(_JEQ, nr, jf=1), _insn(_RET, _ENOSYS)]
    for nr, (flags, mode) in rules.items():
        check = []
        if flags is not None:
            # Not creating a file: the mode argument means nothing; allow (the last insn).
            check += [_insn(_LD_ABS, _arg(flags)), _insn(_JSET, _CREATES, jf=3)]
        check += [
            _insn(_LD_ABS, _arg(mode)),
            _insn(_JSET, _SPECIAL_BITS, jf=1),
            _insn(_RET, _EPERM),
            _insn(_RET, _ALLOW),
        ]
        prog += [_insn(_LD_ABS, _NR), _insn(_JEQ, nr, jf=len(check)), *check]
    prog.append(_insn(_RET, _ALLOW))
    return b"".join(prog)


def setuid_filter_fd() -> int | None:
    """A pipe's read end holding ``setuid_filter()`` (for ``bwrap --seccomp``), or None.

    The caller passes it to bwrap and closes it after bwrap has started.
    """
    program = setuid_filter()
    if program is None:
        return None
    read_fd, write_fd = os.pipe()
    try:
        os.write(write_fd, program)  # far below a pipe's buffer: never blocks
    finally:
        os.close(write_fd)
    return read_fd
