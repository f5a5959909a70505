"""A child agent's own git worktree (``isolation: worktree``): parallel edits that
never collide in the parent's files.

The worktree is made from the parent's workspace as it is when the child
starts (tracked and untracked files, uncommitted changes included: a
``snapshot`` commit on top of HEAD), on a branch ``clover/task-…``, in
clover-code's worktrees folder. The child's file tools and shell act there
(a sandbox of the parent's kind is opened for it, and the permission rules
are the parent's, rooted there). When the child is done its changes are
merged back into the parent's workspace (``git.worktree_merge``): applied
whole when they merge cleanly, else reported with the conflicting hunks and
not applied at all. A merged worktree is removed with its branch; one whose
work was not merged (a conflict, a failed or stopped child) is kept, and the
parent hears where.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
from dataclasses import dataclass, replace
from pathlib import Path

from clover_code.agent.permissions.policy import PermissionPolicy
from clover_code.config.settings import Settings, worktrees_dir
from clover_code.errors import CloverError
from clover_code.git.worktree import (
    BRANCH_PREFIX,
    Snapshot,
    WorktreeError,
    add_worktree,
    changed_files,
    remove_worktree,
    repo_folder,
    repository,
    snapshot,
)
from clover_code.git.worktree_merge import MergeBack, merge_back
from clover_code.tools.base import ToolContext
from clover_code.tools.fileio import LocalFiles
from clover_code.tools.sandbox.base import Sandbox
from clover_code.tools.sandbox.select import choose_from_settings
from clover_code.tools.workspace import Workspace

__all__ = ["SANDBOX_SETTING", "ChildWorktree"]

SANDBOX_SETTING = {"host": "none", "docker": "docker", "bwrap": "bwrap"}
"""The ``sandbox`` setting that opens another sandbox of a parent's kind (an editor's
terminal cannot be opened in another folder: a worktree child has no shell then)."""


@dataclass(slots=True)
class ChildWorktree:
    """One child's worktree: where it is, what it started from, its sandbox."""

    name: str
    path: Path
    branch: str
    top: Path
    """The parent's working tree (the top of its repository), where changes go back."""
    base: Snapshot
    sandbox: Sandbox | None
    settled: bool = False
    """Merged, kept or removed already: later calls do nothing."""

    @classmethod
    async def create(
        cls, parent_root: Path, settings: Settings, parent_sandbox: Sandbox | None
    ) -> ChildWorktree:
        """A worktree of the parent's current state, with a sandbox like the parent's.

        ``WorktreeError`` when the workspace is not in a git repository or git fails."""
        name = f"task-{secrets.token_hex(4)}"
        path, top, base = await asyncio.to_thread(_make, parent_root, name)
        sandbox = None
        kind = SANDBOX_SETTING.get(parent_sandbox.kind) if parent_sandbox else None
        if kind is not None:
            child_settings = settings.model_copy(update={"sandbox": kind})
            try:
                choice = await asyncio.to_thread(choose_from_settings, child_settings, path)
            except BaseException:
                await asyncio.shield(asyncio.to_thread(_remove, top, path, BRANCH_PREFIX + name))
                raise
            sandbox = choice.sandbox
        return cls(name, path, BRANCH_PREFIX + name, top, base, sandbox)

    def context(self, parent: ToolContext, settings: Settings) -> ToolContext:
        """The parent's tool context, acting in this worktree (on the local disk: an
        editor's buffers show the parent's files, not these)."""
        return replace(
            parent,
            workspace=Workspace(
                self.path, protected=settings.own_dirs(), exempt=(worktrees_dir(),)
            ),
            sandbox=self.sandbox,
            files=LocalFiles(),
        )

    def policy(self, parent: PermissionPolicy) -> PermissionPolicy:
        """The parent's rules and session allowances, judged against this worktree."""
        return parent.rooted_at(self.path, contained=bool(self.sandbox and self.sandbox.contained))

    async def close_sandbox(self) -> None:
        """Stop the child's sandbox (its work is done)."""
        sandbox, self.sandbox = self.sandbox, None
        if sandbox is not None:
            await sandbox.close()

    async def merge(self, label: str) -> tuple[MergeBack, str | None]:
        """Merge the child's changes into the parent's workspace; the worktree is removed
        once they are in, else kept. Returns the merge and a sentence for the parent
        when the work was kept."""
        await self.close_sandbox()
        if self.settled:
            return MergeBack([], applied=True), None
        self.settled = True
        try:
            merged = await asyncio.to_thread(merge_back, self.top, self.base, self.path, label)
        except CloverError as exc:
            merged = MergeBack([], applied=False, problem=str(exc).rstrip("."))
        if merged.applied:
            await asyncio.to_thread(_remove, self.top, self.path, self.branch)
            return merged, None
        return merged, self.kept_note()

    async def keep_if_changed(self) -> str | None:
        """For a child whose work is not merged (it failed or was stopped): keep the
        worktree when it changed anything (a sentence saying where), else remove it."""
        await self.close_sandbox()
        if self.settled:
            return None
        self.settled = True
        try:
            changed = await asyncio.to_thread(changed_files, self.path)
        except CloverError:
            changed = ["(unknown)"]
        if not changed:
            await asyncio.to_thread(_remove, self.top, self.path, self.branch)
            return None
        return self.kept_note("Its unmerged changes are kept")

    def kept_note(self, lead: str = "Its work is kept") -> str:
        """Where the child's work stays, and how to get rid of it."""
        return (
            f"{lead} in the worktree {self.path} on branch {self.branch}; the "
            f"user can merge it there or remove it (clover-code worktree remove {self.name})."
        )


def _make(parent_root: Path, name: str) -> tuple[Path, Path, Snapshot]:
    try:
        top, common = repository(parent_root)
    except WorktreeError:
        raise WorktreeError(
            f"a child agent's own worktree needs {parent_root} to be a git repository; "
            "run the task without isolation, or make the folder a repository (git init)."
        ) from None
    base = snapshot(top, f"clover-code: the workspace as {name} started")
    path = repo_folder(worktrees_dir(), top, common) / name
    add_worktree(top, path, BRANCH_PREFIX + name, base.commit)
    return path, top, base


def _remove(top: Path, path: Path, branch: str) -> None:
    # Best effort: what cannot be removed now, `clover-code worktree prune` removes later.
    with contextlib.suppress(CloverError):
        remove_worktree(top, path, branch=branch, force=True)
