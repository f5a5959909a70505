"""What ``.git`` is and holds, for the guard, and what sandboxes mount read-only.

``read_only_paths`` names what the Docker and bubblewrap sandboxes mount
read-only; ``snapshot`` records a ``.git``'s kind and identity (device, inode)
and every file in its git directory that can make git run a program: hooks,
``config`` (and files it includes inside the git directory),
``config.worktree``, ``commondir``, ``info/attributes``, the same in
submodule git directories under ``modules/`` and worktrees under
``worktrees/``, and the common directory a linked worktree shares.
``git_guard`` compares two snapshots and puts things back. ``linked_git_dirs``
names what a linked worktree's ``.git`` file points to outside the workspace
(its git directory in the main repository, and the main ``.git``): sandboxes
mount those read-only too, so git works inside them and cannot change them.
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

__all__ = [
    "ASIDE",
    "FileCopy",
    "GitState",
    "dot_gits",
    "gitlink_dot_gits",
    "linked_git_dirs",
    "program_files",
    "read_only_paths",
    "snapshot",
]


_SKIP_DIRS = frozenset({"objects", "refs", "logs", "lfs", "rr-cache", "svn"})
"""Directories in a git dir that hold data git never runs (and that can be large)."""

_PROGRAM_FILES = frozenset({"config", "config.worktree", "commondir"})
"""Files (at any depth of the git dir) whose content can make git run a program."""

_MAX_FILE = 4 * 2**20
"""A protected file larger than this is compared by size and time only, and not kept."""

ASIDE = "clover-quarantine-"
"""Name prefix of what the guard moves out of the way."""

_INCLUDE = re.compile(r"^\s*path\s*=\s*(.+?)\s*$", re.MULTILINE | re.IGNORECASE)


def _inside(path: Path, root: Path) -> bool:
    return path == root or path.is_relative_to(root)


def _pointer_target(dot_git: Path) -> Path | None:
    """The git directory a ``.git`` file (``gitdir: <path>``) points to, resolved."""
    try:
        if not stat.S_ISREG(os.stat(dot_git).st_mode):
            return None
        with dot_git.open("rb") as fh:
            text = fh.read(65536).decode("utf-8", "replace")
    except OSError:
        return None
    if "\0" in text:
        return None
    first = text.splitlines()[0] if text else ""
    if not first.startswith("gitdir:"):
        return None
    target = Path(first.removeprefix("gitdir:").strip())
    if not target.is_absolute():
        target = dot_git.parent / target
    return Path(os.path.realpath(target))


def dot_gits(root: Path) -> list[Path]:
    """``root/.git`` (there or not: one can be made), the nearest ancestor's ``.git``
    when ``root`` has none (the workspace is a directory inside a repository), and
    the ``.git`` of every gitlink (``gitlink_dot_gits``)."""
    found = [root / ".git"]
    if not os.path.lexists(found[0]):
        for base in root.parents:
            if os.path.lexists(base / ".git"):
                found.append(base / ".git")
                break
    return found + gitlink_dot_gits(root)


def gitlink_dot_gits(root: Path) -> list[Path]:
    """The ``.git`` of each repository the index records as a gitlink (a submodule, or
    an embedded repository that was added): the user's git enters these and reads
    their config. The index lives in ``.git``, so a sandbox cannot add to this list."""
    if not os.path.isdir(root / ".git") and not os.path.isfile(root / ".git"):
        return []
    from clover_code.git.hardening import HARDENING_CONFIG, git_env

    argv = ["git", *(a for k, v in HARDENING_CONFIG for a in ("-c", f"{k}={v}"))]
    argv += ["ls-files", "-s", "-z"]
    try:
        proc = subprocess.run(argv, cwd=root, env=git_env(), capture_output=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return []
    found = []
    for record in proc.stdout.split(b"\0") if proc.returncode == 0 else []:
        if record.startswith(b"160000 "):
            path = root / os.fsdecode(record.partition(b"\t")[2])
            if os.path.realpath(path) == str(path):  # never through a link the agent made
                found.append(path / ".git")
    return found


def _protect(dot: Path, root: Path, found: list[Path]) -> None:
    """Add what protects one ``.git`` (directory, file and target, or link target)."""

    def add(path: Path) -> None:
        if _inside(path, root) and path != root and not any(_inside(path, p) for p in found):
            found.append(path)

    if dot.is_symlink():
        real = Path(os.path.realpath(dot))
        if real.is_dir():
            add(real)
        return
    if dot.is_dir():
        add(dot)
        return
    if not dot.is_file():
        return
    add(dot)
    target = _pointer_target(dot)
    if target is not None and target.is_dir():
        add(target)
        with contextlib.suppress(OSError):
            rel = (target / "commondir").read_text(encoding="utf-8").strip()
            real = Path(os.path.realpath(target / rel))
            if real.is_dir():
                add(real)


def read_only_paths(root: Path) -> list[Path]:
    """Paths inside ``root`` that a sandbox must mount read-only to protect ``.git``.

    ``.git`` itself when it is a directory; for a ``.git`` file, the file and
    the git directory it names (and that one's ``commondir``) when inside
    ``root``; for a symbolic link, its target when inside ``root``. The same
    for the ``.git`` of every gitlink (submodules). Paths outside the
    workspace are not mounted at all, so they need nothing.
    """
    root = Path(os.path.realpath(root))
    found: list[Path] = []
    for dot in [root / ".git", *gitlink_dot_gits(root)]:
        _protect(dot, root, found)
    return found


def linked_git_dirs(root: Path) -> list[Path]:
    """The git directories outside ``root`` that its ``.git`` file points to, when
    ``root`` is a linked worktree: the worktree's own (``.git/worktrees/NAME`` of the
    main repository, which must point back at this ``.git``) and the common one.

    Anything else (no ``.git`` file, a pointer that is not a real linked worktree's,
    targets inside ``root``) gives nothing: what a command could plant is never
    shown to the next one."""
    root = Path(os.path.realpath(root))
    dot = root / ".git"
    if dot.is_symlink() or not dot.is_file():
        return []
    target = _pointer_target(dot)
    if target is None or not target.is_dir() or not (target / "HEAD").is_file():
        return []
    try:
        back = (target / "gitdir").read_text(encoding="utf-8").strip()
    except OSError:
        return []
    if Path(os.path.realpath(back)) != dot:
        return []  # not this worktree's git directory
    found: list[Path] = []
    for git_dir in sorted(_git_dirs(target), key=lambda d: len(d.parts)):
        real = (git_dir / "objects").is_dir() or git_dir == target
        if real and not _inside(git_dir, root) and not any(_inside(git_dir, p) for p in found):
            found.append(git_dir)
    return found


@dataclass(frozen=True, slots=True)
class FileCopy:
    mode: int
    uid: int
    gid: int
    data: bytes | None
    """The content (a link's target for links); None when too large to keep."""
    size: int
    mtime: int


@dataclass(slots=True)
class GitState:
    """What ``.git`` was before a command: its kind and identity, and its program files."""

    path: Path
    kind: str
    """"dir", "file", "link", "other" (a pipe, a device) or "absent"."""
    ident: tuple[int, int] | None
    pointer: bytes | None = None
    """A ``.git`` file's content or a link's target."""
    git_dir: Path | None = None
    """The git directory: ``.git``, or where a ``.git`` file or link points."""
    files: dict[Path, dict[str, FileCopy]] = field(default_factory=dict)
    """The program files of the git directory and of its ``commondir``, by directory."""


def _read(path: Path, st: os.stat_result) -> FileCopy:
    if stat.S_ISLNK(st.st_mode):
        data: bytes | None = os.fsencode(os.readlink(path))
    elif not stat.S_ISREG(st.st_mode):
        data = b""  # a pipe or device: never opened (a pipe would block the read)
    elif st.st_size > _MAX_FILE:
        data = None
    else:
        data = path.read_bytes()
    return FileCopy(st.st_mode, st.st_uid, st.st_gid, data, st.st_size, st.st_mtime_ns)


def program_files(git_dir: Path) -> dict[str, FileCopy]:
    """Every file in ``git_dir`` that can make git run a program, by relative path."""
    found: dict[str, FileCopy] = {}
    if not git_dir.is_dir() or git_dir.is_symlink():
        return found
    configs: list[Path] = []
    for directory, dirs, names in os.walk(git_dir):
        here = Path(directory)
        rel_dir = here.relative_to(git_dir)
        dirs[:] = sorted(d for d in dirs if d not in _SKIP_DIRS or "hooks" in rel_dir.parts)
        if here == git_dir:  # what the guard moved aside into .git: git never reads it
            dirs[:] = [d for d in dirs if not d.startswith(ASIDE)]
        in_hooks = "hooks" in rel_dir.parts
        in_info = rel_dir.name == "info"
        for name in names:
            if not (in_hooks or name in _PROGRAM_FILES or (in_info and name == "attributes")):
                continue
            path = here / name
            with contextlib.suppress(OSError):
                found[(rel_dir / name).as_posix()] = _read(path, os.lstat(path))
                if name.startswith("config"):
                    configs.append(path)
        # A hooks directory that is a link, or a link where a directory was: keep the link.
        for name in list(dirs):
            path = here / name
            if name == "hooks" and path.is_symlink():
                with contextlib.suppress(OSError):
                    found[(rel_dir / name).as_posix()] = _read(path, os.lstat(path))
    for config in configs:
        for target in _includes(config):
            if _inside(target, git_dir) and target.is_file():
                rel = target.relative_to(git_dir).as_posix()
                with contextlib.suppress(OSError):
                    found.setdefault(rel, _read(target, os.lstat(target)))
    return found


def _includes(config: Path) -> list[Path]:
    """Files a config may include (every ``path =`` line; more is harmless)."""
    try:
        text = config.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return []
    paths = []
    for match in _INCLUDE.finditer(text):
        value = match.group(1).strip('"')
        if "\0" in value:
            continue
        path = Path(os.path.expanduser(value))
        paths.append(Path(os.path.realpath(path if path.is_absolute() else config.parent / path)))
    return paths


def snapshot(dot: Path) -> GitState:
    try:
        st = os.lstat(dot)
    except OSError:
        return GitState(dot, "absent", None)
    ident = (st.st_dev, st.st_ino)
    if stat.S_ISLNK(st.st_mode):
        state = GitState(dot, "link", ident, os.fsencode(os.readlink(dot)))
        real = Path(os.path.realpath(dot))
        state.git_dir = real if real.is_dir() else None
    elif stat.S_ISDIR(st.st_mode):
        state = GitState(dot, "dir", ident, git_dir=dot)
    elif stat.S_ISREG(st.st_mode):
        with dot.open("rb") as fh:
            state = GitState(dot, "file", ident, fh.read(65536))
        state.git_dir = _pointer_target(dot)
    else:
        state = GitState(dot, "other", ident)  # a pipe or device: never opened
    for base in _git_dirs(state.git_dir):
        state.files[base] = program_files(base)
    return state


def _git_dirs(git_dir: Path | None) -> list[Path]:
    """``git_dir`` and the common directory it shares (a linked worktree's main ``.git``)."""
    if git_dir is None or not git_dir.is_dir():
        return []
    dirs = [git_dir]
    with contextlib.suppress(OSError):
        rel = (git_dir / "commondir").read_text(encoding="utf-8").strip()
        common = Path(os.path.realpath(git_dir / rel))
        if common.is_dir() and common != git_dir:
            dirs.append(common)
    return dirs
