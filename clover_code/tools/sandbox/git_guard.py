"""Keep a command from planting, in ``.git``, code that the user's own git later runs.

Git runs programs that its repository names: hooks, ``core.fsmonitor``,
filter and diff drivers in ``config`` (or a file it includes), attributes in
``info/attributes`` that pick those drivers, the same in every submodule's git
directory under ``modules/``. A command that could rewrite these, or swap the
whole ``.git`` for a copy it controls, would run code as the user at their next
``git status``. Two layers stop that:

- ``read_only_paths``: what the Docker and bubblewrap sandboxes mount read-only.
  The whole ``.git`` directory (a mount point cannot be renamed, removed or
  replaced), or for a ``.git`` file (worktree, submodule) the file and the git
  directory it points to when that lies inside the workspace;
- ``GitGuard``: a snapshot of ``.git``'s identity (device, inode, kind) and of
  every file that makes git run programs, taken before each command and
  compared after it, under every sandbox (the host too). Anything changed is
  put back (a swapped ``.git`` is moved aside, the original moved back when it
  is still in the workspace) and ``GitGuard.check`` returns one sentence saying
  so, for the model and the user.

What it cannot do: with ``--sandbox none`` the command ran on the host, so it
could have done anything before the guard looked; and a background process
that outlives the command could change ``.git`` later (inside Docker and
bubblewrap the read-only mount still stops it).
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import stat
import time
from pathlib import Path

from clover_code.tools.sandbox.git_state import (
    ASIDE,
    FileCopy,
    GitState,
    dot_gits,
    program_files,
    read_only_paths,
    snapshot,
)

__all__ = ["GitGuard", "GitState", "read_only_paths"]

_RISKY_CONFIG = re.compile(
    r"fsmonitor|hookspath|filter|textconv|command|external|sshcommand|askpass|editor|"
    r"pager|program|helper|include|worktree|gitproxy|alias|driver",
    re.IGNORECASE,
)


def _quarantine(path: Path, into: Path | None = None) -> Path:
    """Move ``path`` aside to a name git never reads (in ``into``, default its own
    directory); returns the new path."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    into = into or path.parent
    for n in range(1000):
        aside = into / (f"{path.name}-{ASIDE}{stamp}" if into == path.parent else ASIDE + stamp)
        aside = aside.with_name(aside.name + (f"-{n}" if n else ""))
        if not os.path.lexists(aside):
            os.rename(path, aside)
            return aside
    raise OSError(f"no free name to move {path} aside")


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    else:
        path.unlink(missing_ok=True)


def _write(git_dir: Path, rel: str, want: FileCopy) -> None:
    """Put one protected file back, never writing through a link the command left."""
    path = git_dir / rel
    part = git_dir
    for name in Path(rel).parts[:-1]:
        part = part / name
        if part.is_symlink() or (part.exists() and not part.is_dir()):
            part.unlink()
        part.mkdir(exist_ok=True)
    tmp = path.with_name(f".clover-guard-{os.getpid()}-{path.name}")
    _remove(tmp)
    if stat.S_ISLNK(want.mode):
        os.symlink(os.fsdecode(want.data or b""), tmp)
    else:
        tmp.write_bytes(want.data or b"")
        os.chmod(tmp, stat.S_IMODE(want.mode))
    if os.getuid() == 0:
        os.chown(tmp, want.uid, want.gid, follow_symlinks=False)
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    os.replace(tmp, path)


def _put_back(base: Path, kept: dict[str, FileCopy]) -> list[str]:
    """Make the program files under ``base`` what ``kept`` holds; returns those that differed."""
    now = program_files(base)
    changed = sorted(
        rel
        for rel in kept.keys() | now.keys()
        if rel not in now or rel not in kept or not _same(kept[rel], now[rel])
    )
    for rel in changed:
        if rel in kept and kept[rel].data is not None:
            _write(base, rel, kept[rel])
        elif rel not in kept and not _through_link(base, rel):
            _remove(base / rel)
    return changed


def _through_link(base: Path, rel: str) -> bool:
    """Whether a directory on the way from ``base`` to ``rel`` is a link (never act through it)."""
    part = base
    for name in Path(rel).parts[:-1]:
        part = part / name
        if part.is_symlink():
            return True
    return False


def _same(a: FileCopy, b: FileCopy) -> bool:
    if a.data is None or b.data is None:
        return (a.mode, a.size, a.mtime) == (b.mode, b.size, b.mtime)
    return (a.mode, a.data) == (b.mode, b.data)


def _risky_new_git(dot: Path) -> bool:
    """Whether a ``.git`` that a command created names a program git would run."""
    if not dot.is_dir() or dot.is_symlink():
        return True  # a pointer or link to somewhere else: nothing to inspect here
    for rel, info in program_files(dot).items():
        parts = rel.split("/")
        if "hooks" in parts and not rel.endswith(".sample"):
            return True
        if parts[-1].startswith("config") and _RISKY_CONFIG.search(
            (info.data or b"").decode("utf-8", "replace")
        ):
            return True
    return False


class GitGuard:
    """Snapshot ``.git`` before a command (``GitGuard(root)``), ``check()`` after it."""

    def __init__(self, root: Path) -> None:
        self.root = Path(os.path.realpath(root))
        self.before: list[GitState] | None = [snapshot(dot) for dot in dot_gits(self.root)]

    @classmethod
    def before_command(cls, root: Path) -> GitGuard:
        """A guard for ``root``; one that only reports if ``.git`` cannot even be read."""
        try:
            return cls(root)
        except (OSError, ValueError, RecursionError):
            guard = cls.__new__(cls)
            guard.root, guard.before = Path(os.path.realpath(root)), None
            return guard

    def check(self) -> str | None:
        """Put back whatever the command changed; one sentence saying what, or None."""
        if self.before is None:
            return (
                f"clover-code could not read {self.root / '.git'} before the command, so it "
                "cannot tell whether the command changed it; check .git/config and .git/hooks "
                "before running git there."
            )
        sentences = [s for s in map(self._check_one, self.before) if s]
        return " ".join(sentences) or None

    def _check_one(self, before: GitState) -> str | None:
        try:
            what = self._restore(before, snapshot(before.path))
        except (OSError, ValueError, RecursionError) as exc:
            why = getattr(exc, "strerror", None) or exc
            return (
                f"the command changed {before.path} and clover-code could not put it back "
                f"({why}); do not run git in {before.path.parent} until you have checked "
                ".git/config and .git/hooks."
            )
        if not what:
            return None
        return (
            f"the command changed {before.path} ({what}); clover-code put it back, because "
            "git would run programs named there. Commands must not change .git; "
            "leave git setup to the user."
        )

    def _restore(self, before: GitState, after: GitState) -> str:
        dot = before.path
        if before.kind == "absent":
            if after.kind == "absent" or not _risky_new_git(dot):
                return ""
            aside = _quarantine(dot)
            return f"it created a .git that runs programs; it was moved to {aside.name}"
        notes: list[str] = []
        if (after.kind, after.ident) != (before.kind, before.ident) or (
            before.kind != "dir" and after.pointer != before.pointer
        ):
            notes.append(self._put_back_identity(before, after))
        changed: list[str] = []
        for base, kept in before.files.items():
            if base.is_dir() and not base.is_symlink():  # never half a .git where none is
                changed += [f"{base.name}/{rel}" for rel in _put_back(base, kept)]
        if changed:
            names = ", ".join(changed[:6]) + (" and more" if len(changed) > 6 else "")
            notes.append(f"changed {names}")
        return "; ".join(notes)

    def _put_back_identity(self, before: GitState, after: GitState) -> str:
        """Bring back the ``.git`` that was there (the original directory if it can be found)."""
        dot = before.path
        aside = _quarantine(dot) if after.kind != "absent" else None
        moved = f"; what replaced it was moved to {aside.name}" if aside else ""
        if before.kind in ("file", "link"):
            if before.kind == "link":
                os.symlink(os.fsdecode(before.pointer or b""), dot)
            else:
                dot.write_bytes(before.pointer or b"")
            return f"it replaced .git{moved}"
        original = self._find_original(before)
        if original is not None:
            os.rename(original, dot)
            if aside is not None:
                # Kept inside .git, where `git add -A` never picks it up and git never reads it.
                aside = _quarantine(aside, into=dot)
                moved = f"; what replaced it was moved to .git/{aside.name}"
            return f"it moved .git to {original.name}{moved}"
        if aside is not None and aside.is_dir() and not aside.is_symlink():
            # The original is gone; a copy (``cp -a``) is the best repository left: keep it,
            # with the config and hooks put back below.
            os.rename(aside, dot)
            return "it replaced .git with another directory, kept with the old config and hooks"
        return f"it removed .git, which could not be found to put back{moved}; /undo restores it"

    def _find_original(self, before: GitState) -> Path | None:
        """The original ``.git`` directory, if the command only renamed it nearby."""
        parent = before.path.parent
        try:
            below = [p for p in parent.iterdir() if p.is_dir() and not p.is_symlink()]
        except OSError:
            below = []
        for base in (parent, *below):
            with contextlib.suppress(OSError):
                for entry in os.scandir(base):
                    st = entry.stat(follow_symlinks=False)
                    if stat.S_ISDIR(st.st_mode) and (st.st_dev, st.st_ino) == before.ident:
                        return Path(entry.path)
        return None
