"""Whether a folder may be a workspace at all, and whether it is too big to
snapshot without asking first.

``refuse_workspace`` is the one check every front end meets when it opens a
session: ``/``, the home directory itself and clover-code's own directories
(config, data with the trust records and checkpoints, sessions, cache) are
never a workspace, since the agent could then rewrite what the user trusted
(a worktree clover-code made under ``worktrees_dir`` is one).

Checkpoints copy every file git would show (tracked, and untracked but not
ignored) before each turn. In the home directory, or a folder with tens of
thousands of loose files, that is slow and fills the disk, so the user is
asked before the first snapshot.
"""

from __future__ import annotations

import os
from pathlib import Path

from clover_code.config.settings import Settings, user_config_path, user_data_dir, worktrees_dir
from clover_code.errors import UsageError
from clover_code.fs.ignore import IgnoreRules, walk_tree
from clover_code.git.safe import run_git

LOOSE_FILES_LIMIT = 5_000
"""More files than this outside git's tracking (and not ignored) asks first."""


def _loose_files(root: Path, stop_at: int) -> int:
    """Files a snapshot would take that git does not track (counting stops past ``stop_at``)."""
    if (root / ".git").exists():
        proc = run_git(
            "ls-files", "-z", "--others", "--exclude-standard", cwd=root, check=False, timeout=30
        )
        if proc.returncode == 0:
            return proc.stdout.count("\0")
    count = 0
    for _, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d != ".git"]
        count += len(files)
        if count > stop_at:
            break
    return count


def snapshot_warning(
    root: Path, *, home: Path | None = None, limit: int | None = None
) -> str | None:
    """Why snapshotting ``root`` needs the user's yes, or None when it does not."""
    home = home if home is not None else Path.home()
    limit = limit if limit is not None else LOOSE_FILES_LIMIT
    try:
        at_home = root.resolve() == home.resolve()
    except OSError:
        at_home = False
    if at_home:
        return (
            f"{root} is your home directory: undo would copy every file under it before each turn."
        )
    loose = _loose_files(root, limit)
    if loose > limit:
        return (
            f"{root} has more than {limit:,} files outside git: undo would copy them all "
            "before each turn (add them to .gitignore, or start in a smaller folder)."
        )
    return None


def checkpoint_overflow(root: Path, max_files: int, max_bytes: int) -> str | None:
    """Why a checkpoint of ``root`` would pass its cap (``checkpoint_max_files``,
    ``checkpoint_max_bytes``), or None.

    Counts what a snapshot would take (files not ignored, ``.git`` left out)
    without reading any, and stops as soon as either cap is passed, so a
    huge folder costs no more than the cap to judge.
    """
    files = size = 0
    for entry in walk_tree(root, root, rules=IgnoreRules(root)):
        if not entry.is_file:
            continue
        files += 1
        if files > max_files:
            return (
                f"{root} holds more than {max_files:,} files, the checkpoint limit "
                "(checkpoint_max_files)."
            )
        try:
            size += entry.path.lstat().st_size
        except OSError:
            continue
        if size > max_bytes:
            return (
                f"{root} holds more than {max_bytes:,} bytes of files, the checkpoint "
                "limit (checkpoint_max_bytes)."
            )
    return None


def workspace_refusal(
    root: Path,
    own: tuple[Path, ...],
    home: Path | None = None,
    *,
    guarded: tuple[Path, ...] = (),
) -> str | None:
    """Why ``root`` can never be a workspace (one sentence), or None when it can.

    ``own`` are clover-code's own directories (``Settings.own_dirs``); a
    workspace may not even hold a ``guarded`` one (the config and data
    directories): a sandboxed command may write anywhere in the workspace,
    and the next session would trust what it wrote there.
    """
    real = Path(os.path.realpath(root))
    if real.parent == real:
        return (
            f"{root} is the root of the file system, which is never a workspace; "
            "start clover-code in a project folder."
        )
    if real == Path(os.path.realpath(home if home is not None else Path.home())):
        return (
            f"{root} is your home directory, which is never a workspace; start "
            "clover-code in a project folder inside it."
        )
    worktrees = Path(os.path.realpath(worktrees_dir()))
    if real.is_relative_to(worktrees) and real != worktrees:
        return None  # a worktree clover-code made is a workspace
    for folder in own:
        if real.is_relative_to(folder):
            return (
                f"{root} is inside {folder}, one of clover-code's own directories (settings, "
                "trust records, sessions, checkpoints), which is never a workspace; start "
                "clover-code in a project folder."
            )
    for folder in guarded:
        if Path(os.path.realpath(folder)).is_relative_to(real):
            return (
                f"{root} holds {folder}, one of clover-code's own directories, which no "
                "workspace may hold (commands in the sandbox could rewrite your settings); "
                "start clover-code in a project folder."
            )
    return None


def refuse_workspace(root: Path, settings: Settings) -> None:
    """Raise ``UsageError`` when ``root`` can never be a workspace."""
    guarded = (user_config_path().parent, user_data_dir())
    why = workspace_refusal(root, settings.own_dirs(), guarded=guarded)
    if why is not None:
        raise UsageError(why)
