"""Hardened git on the checkpoint store, with the hardening worked out once per operation.

Every git command the harness runs carries overrides that empty the filter
and merge drivers a repository defines (``gitsafe``); working them out costs
two git processes of its own. A checkpoint (list, hash, write the tree,
commit, move the ref) is a run of such commands on the store, a bare
repository of clover-code's own outside the workspace, and none of them runs
a filter, a merge driver or anything inside a submodule: inside
``operation()`` the overrides are worked out once for the run, not per command.
"""

from __future__ import annotations

import contextlib
import subprocess
from collections.abc import Iterator
from pathlib import Path

from clover_code.errors import CloverError
from clover_code.git.hardening import git_env
from clover_code.git.repo_drivers import repo_driver_overrides
from clover_code.git.safe import git_argv, last_line

__all__ = ["CheckpointError", "ShadowGit"]


class CheckpointError(CloverError):
    """A checkpoint could not be taken or restored, or an undo was refused."""


class ShadowGit:
    """Runs git on the store at ``git_dir``, the workspace at ``root`` as its work tree."""

    def __init__(self, root: Path, git_dir: Path, index: Path) -> None:
        self.root = root
        self.git_dir = git_dir
        self._index = index
        self._pins: dict[Path | None, list[tuple[str, str]]] | None = None

    @contextlib.contextmanager
    def operation(self) -> Iterator[None]:
        """Within, every command of the store shares one working-out of the overrides."""
        outer = self._pins is None
        if outer:
            self._pins = {}
        try:
            yield
        finally:
            if outer:
                self._pins = None

    def git(
        self,
        *args: str,
        input: bytes | str | None = None,
        index: bool = False,
        work_tree: bool = True,
    ) -> str:
        """Run hardened git on the store; returns stdout as text."""
        data = input.encode() if isinstance(input, str) else input
        out = self.git_bytes(*args, input=data, index=index, work_tree=work_tree)
        return out.decode("utf-8", "surrogateescape")

    def git_bytes(
        self, *args: str, input: bytes | None = None, index: bool = False, work_tree: bool = True
    ) -> bytes:
        """Run hardened git on the store, the workspace as its work tree; returns stdout."""
        env = git_env()
        if index:
            env["GIT_INDEX_FILE"] = str(self._index)
        workspace = self.root if self.root.is_dir() else None
        cwd, tree = (self.root, self.root) if work_tree and workspace else (self.git_dir, None)
        # One set of overrides for every command on the store, worked out with the
        # workspace as the work tree (its .gitmodules: the submodules to ignore): a
        # command without it needs no more than that (the store is a bare repository of
        # ours, with no .gitmodules or gitlinks of its own), so one reading serves both.
        # Which index is used does not change them either: the store's holds no gitlinks.
        drivers = None if self._pins is None else self._pins.get(workspace)
        if drivers is None:
            where = workspace or self.git_dir
            drivers = repo_driver_overrides(where, git_dir=self.git_dir, work_tree=workspace)
            if self._pins is not None:
                self._pins[workspace] = drivers
        argv = git_argv(
            args, cwd=cwd, git_dir=self.git_dir, work_tree=tree, env=env, drivers=drivers
        )
        proc = subprocess.run(argv, cwd=cwd, env=env, input=input, capture_output=True, check=False)
        if proc.returncode != 0:
            err = proc.stderr.decode("utf-8", "replace")
            raise CheckpointError(f"checkpoint store: git {args[0]} failed: {last_line(err)}.")
        return proc.stdout
