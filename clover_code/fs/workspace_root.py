"""Where the workspace is: the git top level above a folder, found without running git."""

from __future__ import annotations

from pathlib import Path

__all__ = ["find_root"]


def find_root(cwd: Path) -> tuple[Path, bool]:
    """The workspace root (the git top level, else ``cwd``) and whether it is a git repo.

    Found as git finds it, by walking up to the first folder whose ``.git`` is a
    repository (a directory with ``HEAD`` and objects) or a ``gitdir:`` pointer
    (a worktree or submodule), without starting a program.
    """
    start = cwd.resolve()
    for folder in (start, *start.parents):
        if _marks_repository(folder / ".git"):
            return folder, True
    return start, False


def _marks_repository(dot: Path) -> bool:
    try:
        if dot.is_dir():
            return (dot / "HEAD").is_file() and (
                (dot / "objects").is_dir() or (dot / "commondir").is_file()
            )
        if dot.is_file():
            with dot.open("rb") as fh:
                return fh.read(8) == b"gitdir: "
    except OSError:
        pass
    return False
