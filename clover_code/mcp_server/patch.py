"""What a task changed in a git workspace, as a patch.

Before and after a task the whole working tree (tracked and untracked files,
``.gitignore`` respected) is written as a git tree through a temporary index,
so neither the user's index nor their branches are touched; the patch is
the diff between the two trees. git runs hardened (``gitsafe``): the
repository's own config cannot make it run a program.
"""

from __future__ import annotations

import asyncio
import subprocess
import tempfile
from pathlib import Path

from clover_code.git.safe import run_git

__all__ = ["patch_between", "tree_of"]

_EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"


def _git(root: Path, index: Path | None, *args: str) -> subprocess.CompletedProcess[str]:
    return run_git(*args, cwd=root, index=index, check=False)


def _tree(root: Path) -> str | None:
    if _git(root, None, "rev-parse", "--is-inside-work-tree").returncode != 0:
        return None
    top = _git(root, None, "rev-parse", "--show-toplevel").stdout.strip()
    with tempfile.TemporaryDirectory(prefix="clover-patch-") as tmp:
        index = Path(tmp) / "index"
        base = (
            "HEAD"
            if _git(root, None, "rev-parse", "--verify", "-q", "HEAD").returncode == 0
            else _EMPTY_TREE
        )
        for args in (("read-tree", base), ("add", "-A", "--", top)):
            if _git(root, index, *args).returncode != 0:
                return None
        written = _git(root, index, "write-tree")
        return written.stdout.strip() if written.returncode == 0 else None


async def tree_of(root: Path) -> str | None:
    """The working tree of ``root``'s repository as a tree id; None outside git."""
    return await asyncio.to_thread(_tree, root)


async def patch_between(root: Path, before: str | None, after: str | None) -> str | None:
    """The patch from tree ``before`` to tree ``after`` (None when either is unknown)."""
    if before is None or after is None:
        return None
    done = await asyncio.to_thread(
        _git, root, None, "diff", "--no-color", "--binary", before, after
    )
    return done.stdout if done.returncode == 0 else None
