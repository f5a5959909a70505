"""What a sandbox mounts read-only inside the workspace.

``.git`` (``git_state.read_only_paths``; for a linked worktree also the git
directories its ``.git`` file points to outside the workspace, ``outside_paths``),
the project's control files
(``.clover/``, ``.mcp.json``, ``.agents/``, ``.devcontainer/``, ``.claude/``)
and every workspace script a trusted setting names as a program (resolved at
session start, ``TrustReport.trusted_scripts``): the host runs or reads them,
so a sandboxed command must not be able to change them. A mount point cannot
be written, renamed, removed or replaced from inside. The check before every
host run (``clover_code.agent.extensions.host_programs``) is the second line, and the
only one with ``--sandbox none``.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from clover_code.fs.named_files import CONTROL_PATHS, inside
from clover_code.tools.sandbox.git_state import linked_git_dirs, read_only_paths

__all__ = ["outside_paths", "protected_paths"]


def protected_paths(root: Path, scripts: Iterable[str] = ()) -> list[Path]:
    """The existing paths inside ``root`` to mount read-only (links resolved;
    nothing outside the workspace, which is not mounted writable anyway)."""
    top = Path(os.path.realpath(root))
    found = read_only_paths(top)
    for rel in (*CONTROL_PATHS, *scripts):
        path = top / rel
        if not os.path.lexists(path):
            continue
        real = Path(os.path.realpath(path))
        if real == top or not real.exists() or not inside(real, top):
            continue
        if not any(real == p or real.is_relative_to(p) for p in found):
            found.append(real)
    return found


def outside_paths(root: Path) -> list[Path]:
    """Paths outside ``root`` a sandbox mounts read-only at the same place: the git
    directories of a linked worktree (git works in the sandbox; nothing there changes)."""
    return linked_git_dirs(Path(os.path.realpath(root)))
