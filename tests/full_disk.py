"""A real, tiny file system that fills up: a tmpfs of a few pages (needs root).

Tests that must see the kernel's own ENOSPC mount one with ``tiny_tmpfs``;
where mounting is not allowed (not root, or a container without the
capability) they are skipped with the reason, never faked.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

__all__ = ["fill_until", "tiny_tmpfs"]


@contextlib.contextmanager
def tiny_tmpfs(where: Path, size: str = "64k") -> Iterator[Path]:
    """Mount a tmpfs of ``size`` at ``where`` for the block; skip when that is not allowed."""
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("mounting a tiny tmpfs (to fill a disk for real) needs root")
    where.mkdir(parents=True, exist_ok=True)
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size},mode=0755", "tmpfs", str(where)],
        capture_output=True,
        text=True,
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.strip()}")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


def fill_until(where: Path, free: int) -> None:
    """Write a filler file so that about ``free`` bytes stay available in ``where``."""
    stat = os.statvfs(where)
    available = stat.f_bavail * stat.f_frsize
    with (where / "filler").open("wb") as fh:
        fh.write(b"\0" * max(0, available - free))
