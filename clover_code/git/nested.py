"""The filter and merge drivers that repositories nested in a work tree define.

Some git commands look inside a submodule whatever the settings say (``git
add`` runs ``git status`` in every submodule it meets, for one), and that
status runs the submodule's own filter drivers. Settings given on the command
line reach such inner git processes too, so ``gitsafe`` empties every driver
found here as well as the top repository's own.

Where nested repositories are looked for: the gitlinks of the index (a
registered submodule or an embedded repository that was added), and in turn
theirs, a few levels deep; and every git directory under ``.git/modules``.
Reading them runs no program: ``git ls-files`` and ``git config --file`` only.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import NamedTuple

__all__ = ["Nested", "drivers_of", "nested_drivers", "nested_repositories"]

MAX_DEPTH = 4
"""How many levels of submodules inside submodules are followed."""

MAX_REPOS = 200
"""How many nested repositories are read at most (a bound on the cost per git command)."""

_SKIP = frozenset({"objects", "refs", "logs", "lfs", "hooks", "info"})


def _run(argv: list[str], cwd: Path, env: Mapping[str, str]) -> bytes:
    try:
        proc = subprocess.run(
            argv, cwd=cwd, env=dict(env), capture_output=True, timeout=30, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return b""
    return proc.stdout if proc.returncode == 0 else b""


def _git_dir_of(work_tree: Path) -> Path | None:
    """The git directory of a nested work tree: ``.git`` itself or where a ``.git`` file points."""
    dot = work_tree / ".git"
    if dot.is_dir() and not dot.is_symlink():
        return dot
    if not dot.is_file() or dot.is_symlink():
        return None
    try:
        with dot.open("rb") as fh:
            first = fh.read(4096).decode("utf-8", "replace").splitlines()
    except OSError:
        return None
    if not first or not first[0].startswith("gitdir:") or "\0" in first[0]:
        return None
    target = Path(first[0].removeprefix("gitdir:").strip())
    target = target if target.is_absolute() else work_tree / target
    return Path(os.path.realpath(target)) if target.is_dir() else None


def _gitlinks(
    git: Sequence[str], git_dir: Path, work_tree: Path, env: Mapping[str, str]
) -> list[Path]:
    """Work trees of the gitlinks in this repository's index."""
    try:
        os.stat(work_tree / env.get("GIT_INDEX_FILE", git_dir / "index"))
    except FileNotFoundError:
        return []  # no index, no gitlink (git would list nothing): one process fewer
    except OSError:
        pass  # git says
    argv = [*git, f"--git-dir={git_dir}", f"--work-tree={work_tree}", "ls-files", "-s", "-z"]
    found = []
    for record in _run(argv, work_tree, env).split(b"\0"):
        if record.startswith(b"160000 "):
            path = os.fsdecode(record.partition(b"\t")[2])
            found.append(work_tree / path)
    return found


def _module_dirs(git_dir: Path) -> list[Path]:
    """Git directories under ``git_dir/modules`` (submodules' stores, at any depth)."""
    base = git_dir / "modules"
    found = []
    for directory, dirs, names in os.walk(base):
        if "HEAD" in names and "config" in names:
            found.append(Path(directory))
        dirs[:] = [d for d in dirs if d not in _SKIP]
    return found


def _drivers(git: Sequence[str], git_dir: Path, env: Mapping[str, str]) -> set[tuple[str, str]]:
    found: set[tuple[str, str]] = set()
    for name in ("config", "config.worktree"):
        config = git_dir / name
        if not config.is_file():
            continue
        argv = [*git, "config", "--file", str(config), "--list", "--name-only", "-z", "--includes"]
        for key in _run(argv, git_dir, env).decode("utf-8", "surrogateescape").split("\0"):
            section, _, rest = key.partition(".")
            if section.lower() in ("filter", "merge") and "." in rest:
                found.add((section.lower(), rest.rpartition(".")[0]))
    return found


def nested_drivers(
    git: Sequence[str], git_dir: Path, work_tree: Path | None, env: Mapping[str, str]
) -> set[tuple[str, str]]:
    """(section, name) of each filter and merge driver that a nested repository defines.

    ``git`` is the command to run (the git program and hardening options).
    """
    return drivers_of(git, nested_repositories(git, git_dir, work_tree, env).stores, env)


class Nested(NamedTuple):
    """The repositories nested in one."""

    stores: list[Path]
    """Their git directories."""
    gitlinks: int
    """How many gitlinks the indexes hold (with a repository behind them or not yet)."""


def nested_repositories(
    git: Sequence[str], git_dir: Path, work_tree: Path | None, env: Mapping[str, str]
) -> Nested:
    """The repositories nested in this one (see the module's docstring for where they
    are looked for)."""
    seen: set[Path] = {Path(os.path.realpath(git_dir))}
    stores: list[Path] = []
    gitlinks = 0
    queue: list[tuple[Path, Path, int]] = []
    if work_tree is not None:
        queue.append((git_dir, work_tree, 0))
    while queue and len(seen) < MAX_REPOS:
        top_dir, tree, depth = queue.pop()
        if depth >= MAX_DEPTH:
            continue
        for nested_tree in _gitlinks(git, top_dir, tree, env):
            gitlinks += 1
            nested_dir = _git_dir_of(nested_tree)
            if nested_dir is None or nested_dir in seen:
                continue
            seen.add(nested_dir)
            stores.append(nested_dir)
            queue.append((nested_dir, nested_tree, depth + 1))
    for module in _module_dirs(git_dir):
        real = Path(os.path.realpath(module))
        if real not in seen and len(seen) < MAX_REPOS:
            seen.add(real)
            stores.append(real)
    return Nested(stores, gitlinks)


def drivers_of(
    git: Sequence[str], stores: Sequence[Path], env: Mapping[str, str]
) -> set[tuple[str, str]]:
    """(section, name) of each filter and merge driver these git directories' configs define."""
    found: set[tuple[str, str]] = set()
    for store in stores:
        found |= _drivers(git, store, env)
    return found
