"""The ``patch`` and ``files_changed`` of a headless result.

Computed from the session's checkpoint store: the snapshot taken before the
first turn against the workspace as the run left it. The snapshot holds what
git would show (tracked files and untracked files that are not ignored), so
files made or changed by shell commands count too, and a directory that is not
a git repository works the same way. The diff runs through the hardened git of
``clover_code.git.safe`` (no external diff, textconv or other repository-configured
program); binary files appear as git's "Binary files ... differ" line.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from clover_code.agent.checkpoints.store import CheckpointError, CheckpointStore


@dataclass(frozen=True, slots=True)
class RunPatch:
    """What the run changed in the workspace, or why that is unknown."""

    patch: str = ""
    files: list[str] = field(default_factory=list)
    warning: str | None = None
    """Set when the patch could not be computed (then ``patch`` is empty)."""


async def run_patch(store: CheckpointStore | None, *, settled: bool = False) -> RunPatch:
    """The diff of the workspace since the session's first checkpoint.

    Empty when checkpoints were off (``--no-checkpoints``, a workspace that
    needed a yes to snapshot) or no turn started; never raises. ``settled``:
    nothing has changed the workspace since the last turn ended (its end
    snapshot is the workspace as the run left it).
    """
    if store is None:
        return RunPatch()
    try:
        patch, files = await asyncio.to_thread(store.diff_since_session_start, as_turn_left=settled)
    except CheckpointError as exc:
        return RunPatch(warning=f"the result's patch could not be computed: {exc}")
    return RunPatch(patch=patch, files=files)
