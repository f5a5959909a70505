"""Replacing a file atomically: readers see the old or the new content, never a mix."""

from __future__ import annotations

import contextlib
import os
import secrets
from pathlib import Path

from clover_code.errors import ToolError

__all__ = ["atomic_write"]


def atomic_write(path: Path, data: bytes) -> None:
    """Replace ``path`` with ``data`` so readers see the old or the new file, never a mix.

    Writes a temporary file in the same directory, fsyncs it and renames it
    over ``path``. An existing file keeps its permission bits; a new one
    gets the usual ``0o666`` less the umask. Missing parent directories are
    created. Raises ``ToolError`` when the file system refuses.
    """
    directory = path.parent
    try:
        directory.mkdir(parents=True, exist_ok=True)
        try:
            mode: int | None = path.stat().st_mode & 0o7777
        except FileNotFoundError:
            mode = None
        tmp = directory / f".{path.name}.clover-{secrets.token_hex(4)}.tmp"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        try:
            with os.fdopen(fd, "wb") as handle:
                if mode is not None:
                    os.fchmod(handle.fileno(), mode)
                handle.write(data)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(tmp, path)
        except BaseException:
            with contextlib.suppress(OSError):
                tmp.unlink()
            raise
        _fsync_dir(directory)
    except OSError as error:
        reason = error.strerror or str(error)
        raise ToolError(f"could not write {path}: {reason}") from error


def _fsync_dir(directory: Path) -> None:
    # Makes the rename durable; some file systems do not allow it, which is fine.
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
