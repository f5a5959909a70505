"""Files only their owner may read: session transcripts, checkpoint stores, locks.

``private_dir`` makes a directory (and the parents it has to make) mode 0700
and ``open_private`` opens a file mode 0600, whatever the umask: another
local user must not list a checkpoint store or read a transcript.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import IO

__all__ = ["open_private", "private_dir"]


def private_dir(path: Path) -> None:
    """Make ``path`` a directory only its owner may enter (0700); so are the parents made.

    An existing directory this user owns is made private too; raises ``OSError``."""
    missing: list[Path] = []
    current = path
    while not current.exists():
        missing.append(current)
        current = current.parent
    for directory in reversed(missing):
        with contextlib.suppress(FileExistsError):
            directory.mkdir(mode=0o700)
        os.chmod(directory, 0o700)  # the umask may have taken bits off, or a race made it
    st = os.stat(path)
    if st.st_uid == os.getuid() and st.st_mode & 0o077:
        os.chmod(path, 0o700)


def open_private(path: Path, *, append: bool = True) -> IO[bytes]:
    """Open ``path`` for binary writing, created mode 0600 (kept if it exists); appending
    by default, else positioned at its start and not truncated."""
    flags = os.O_WRONLY | os.O_CREAT | getattr(os, "O_CLOEXEC", 0)
    fd = os.open(path, flags | (os.O_APPEND if append else 0), 0o600)
    try:
        if os.fstat(fd).st_mode & 0o077:
            os.fchmod(fd, 0o600)
        return os.fdopen(fd, "ab" if append else "wb", buffering=0)
    except BaseException:
        os.close(fd)
        raise
