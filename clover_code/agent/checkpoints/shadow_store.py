"""The shadow git store that checkpoints live in: objects, trees and queries.

A bare repository outside the workspace whose work tree is the workspace.
Blobs are hashed in Python from the raw bytes (no filter, no line-ending
conversion, so undo gives back exactly what was there); a stat cache spares
files that did not change even that. Only blobs the store lacks are written:
a few as loose objects, many as one pack streamed into ``git index-pack``
(thousands of small files would otherwise cost seconds). Trees, commits and
diffs are made by git, always through ``clover_code.git.safe`` (hooks and
repository-configured programs off), with an index file of this session's
own; the user's ``.git`` is only ever read.

A snapshot tree has two subtrees: ``files/`` (what git would show in the
workspace: tracked files, and untracked files that are not ignored) and
``dotgit/`` (the workspace's ``.git`` directory, when asked for and small
enough).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import stat
import struct
import subprocess
import tempfile
import time
import zlib
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from clover_code.agent.checkpoints.git_objects import (
    blob_sha,
    file_content,
    index_line,
    pack_entry_header,
)
from clover_code.agent.checkpoints.shadow_git import CheckpointError, ShadowGit
from clover_code.fs.private import open_private, private_dir
from clover_code.fs.stamps import Remembered, stamps
from clover_code.git.hardening import git_env
from clover_code.git.safe import git_argv, last_line, run_git

__all__ = [
    "DOTGIT",
    "FILES",
    "MAX_FILE_BYTES",
    "MAX_GIT_BYTES",
    "CheckpointError",
    "Entry",
    "ShadowStore",
    "safe_rel",
]

MAX_FILE_BYTES = 64 * 1024 * 1024
"""Workspace files larger than this are not snapshotted (undo leaves them alone)."""

MAX_GIT_BYTES = 256 * 1024 * 1024
"""A ``.git`` directory larger than this is not snapshotted."""

FILES, DOTGIT = "files/", "dotgit/"
"""Prefixes of the two subtrees of a snapshot."""

_RACY_NS = 2_000_000_000  # files modified this recently are hashed again next time
_PACK_FROM = 64  # this many new blobs go into one pack instead of loose objects

Entry = tuple[str, str]
"""(git mode, blob sha) of one path in a snapshot."""


_TRACKED: Remembered[frozenset[str]] = Remembered(8)
"""The tracked files of workspaces' repositories (``_tracked``)."""


def _tracked(root: Path) -> frozenset[str]:
    """The files the repository of ``root`` tracks (``git ls-files``), remembered while its
    index keeps its stamp: a turn's two snapshots ask for them, and only a new index
    changes the answer. A ``.git`` file (a linked worktree, a submodule) is asked each time."""
    dot_git = root / ".git"
    taken = stamps([dot_git / "index"]) if dot_git.is_dir() and not dot_git.is_symlink() else None
    if taken is not None and (known := _TRACKED.get(root, taken)) is not None:
        return known
    proc = run_git("ls-files", "-z", cwd=root, check=False)
    if proc.returncode != 0:
        return frozenset()
    found = frozenset(proc.stdout.split("\0"))
    if taken is not None:
        _TRACKED.put(root, taken, found)
    return found


@dataclass(slots=True, frozen=True)
class _Stat:
    size: int
    mtime: int
    ctime: int
    ino: int
    mode: int


def safe_rel(rel: str) -> bool:
    """Whether a relative POSIX path is plain: no empty, ``.``, ``..`` or ``.git`` part."""
    return all(p not in ("", ".", "..") and p.casefold() != ".git" for p in rel.split("/"))


class ShadowStore(ShadowGit):
    """One bare repository at ``git_dir`` shadowing the workspace at ``root``."""

    def __init__(self, root: Path, git_dir: Path, session_id: str) -> None:
        session_id = re.sub(r"[^A-Za-z0-9_-]", "_", session_id) or "default"
        super().__init__(root, git_dir, git_dir / f"index-{session_id}")
        self.session_id = session_id
        self._head: str | None = None
        self._cache: dict[str, tuple[_Stat, str]] = {}
        self._git_too_big = False
        self._skipped: set[str] = set()
        self.files_digest = b""
        """A digest of the last capture's ``files/`` part (its paths, modes and blobs): two
        captures with the same digest have the same files."""
        self.notices: list[str] = []
        """Things the user should know (``.git`` too large to snapshot); drain it."""
        try:
            private_dir(git_dir.parent)  # another local user must not list any store
            private_dir(git_dir)
        except OSError as exc:
            raise CheckpointError(
                f"could not make the checkpoint store {git_dir} ({exc.strerror or exc})."
            ) from None
        if not (git_dir / "HEAD").is_file():
            # --shared=0600: git makes every file 0600 and directory 0700, whatever the umask.
            self.git("init", "--bare", "-q", "--shared=0600", work_tree=False)
            for key, value in (
                ("gc.auto", "0"),
                ("user.name", "clover-code"),
                ("user.email", "checkpoints@clover-code.invalid"),
            ):
                self.git("config", key, value, work_tree=False)
            with open_private(git_dir / "clover-root", append=False) as fh:
                fh.write(f"{root}\n".encode())

    # --------------------------------------------------------------- capture

    def capture(self, *, with_git: bool) -> str:
        """Write a tree of the workspace (and of ``.git``) to the store; returns its sha."""
        items: list[tuple[str, str, int | None]] = [
            (FILES + rel, path, MAX_FILE_BYTES) for rel, path in self._list_files()
        ]
        if with_git:
            items += [(DOTGIT + rel, path, None) for rel, path in self._list_dotgit()]
        entries = self._hash(items)
        lines = [index_line(name, *entries[name]) for name in sorted(entries)]
        files = hashlib.sha256()
        for name, line in zip(sorted(entries), lines, strict=True):
            if name.startswith(FILES):
                files.update(line)
        self.files_digest = files.digest()
        self._index.unlink(missing_ok=True)
        try:
            self.git("update-index", "-z", "--index-info", input=b"".join(lines), index=True)
            return self.git("write-tree", index=True).strip()
        finally:
            self._index.unlink(missing_ok=True)

    def commit(self, tree: str, message: str) -> str:
        """A commit of ``tree`` on this session's ref (so the objects stay reachable)."""
        args = ["commit-tree", tree, "-m", f"{self.session_id}: {message}"]
        if self._head:
            args += ["-p", self._head]
        commit = self.git(*args, work_tree=False).strip()
        self.git("update-ref", f"refs/clover/{self.session_id}", commit, work_tree=False)
        self._head = commit
        return commit

    def _list_files(self) -> list[tuple[str, str]]:
        """(relative, absolute) paths of what git would show in the workspace."""
        if not self.root.is_dir():
            return []
        args = ["ls-files", "-z", "--others", "--exclude-standard"]
        exclude = self.root / ".git" / "info" / "exclude"
        if exclude.is_file():
            args.append(f"--exclude-from={exclude}")
        names = set(self.git(*args, index=True).split("\0"))
        dot_git = self.root / ".git"
        if dot_git.is_file() or (dot_git.is_dir() and not dot_git.is_symlink()):
            # Tracked files count even when an ignore rule matches them.
            names.update(_tracked(self.root))
        base = f"{self.root}{os.sep}"
        return [(rel, base + rel) for rel in names if rel and safe_rel(rel)]

    def _list_dotgit(self) -> list[tuple[str, str]]:
        """(relative, absolute) paths of the files in ``.git``, unless it is too large."""
        base = self.root / ".git"
        if self._git_too_big or not base.is_dir() or base.is_symlink():
            return []
        found: list[tuple[str, str]] = []
        total = 0
        for directory, dirs, files in os.walk(base):
            dirs.sort()
            for name in files:
                path = os.path.join(directory, name)
                rel = Path(path).relative_to(base).as_posix()
                if name.endswith(".lock") or not safe_rel(rel):
                    continue
                with contextlib.suppress(OSError):
                    total += os.lstat(path).st_size
                    found.append((rel, path))
        if total > MAX_GIT_BYTES:
            self._git_too_big = True
            self.notices.append(
                f"{base} is {total // 2**20} MiB, too large to checkpoint: undo restores the "
                "files but cannot bring back .git if it is deleted."
            )
            return []
        return found

    def _hash(self, items: list[tuple[str, str, int | None]]) -> dict[str, Entry]:
        """Entries for (index path, file, size limit) items; stores the blobs the store lacks.

        Unchanged files (same stat as last time) cost one ``lstat``; the others
        are hashed, and only blobs the store does not have yet are written.
        """
        entries: dict[str, Entry] = {}
        fresh: list[tuple[str, str, _Stat]] = []
        for name, path, limit in items:
            try:
                st = os.lstat(path)
            except OSError:
                continue
            if stat.S_ISLNK(st.st_mode):
                mode = "120000"
            elif stat.S_ISREG(st.st_mode) and (limit is None or st.st_size <= limit):
                mode = "100755" if st.st_mode & 0o111 else "100644"
            else:
                if stat.S_ISREG(st.st_mode):
                    self._skip_large(name.removeprefix(FILES), st.st_size)
                continue
            sig = _Stat(st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_mode)
            cached = self._cache.get(name)
            if cached is not None and cached[0] == sig:
                entries[name] = (mode, cached[1])
                continue
            with contextlib.suppress(OSError):
                entries[name] = (mode, blob_sha(file_content(path, mode)))
                fresh.append((name, path, sig))
        missing = self._missing({entries[name][1] for name, _, _ in fresh})
        to_write = [(n, p) for n, p, _ in fresh if entries[n][1] in missing]
        for name, sha in self._write_blobs(to_write, entries).items():
            entries[name] = (entries[name][0], sha)
        now = time.time_ns()
        for name, _, sig in fresh:
            if name in entries and now - sig.mtime > _RACY_NS:
                self._cache[name] = (sig, entries[name][1])
        return entries

    def _skip_large(self, rel: str, size: int) -> None:
        """Say once per file that it is too large to checkpoint."""
        if rel in self._skipped:
            return
        self._skipped.add(rel)
        if len(self._skipped) > 5:
            if len(self._skipped) == 6:
                self.notices.append("More files over the checkpoint limit are not snapshotted.")
            return
        self.notices.append(
            f"{rel} is {size // 2**20} MiB, over the {MAX_FILE_BYTES // 2**20} MiB checkpoint "
            "limit: it is not snapshotted, so undo leaves it as it is."
        )

    def _missing(self, shas: set[str]) -> set[str]:
        """Which of these blobs the store lacks."""
        if not shas:
            return set()
        request = "".join(f"{sha}\n" for sha in sorted(shas)).encode()
        out = self.git("cat-file", "--batch-check", input=request, work_tree=False)
        return {line.split()[0] for line in out.splitlines() if line.endswith(" missing")}

    def _write_blobs(
        self, items: list[tuple[str, str]], entries: dict[str, Entry]
    ) -> dict[str, str]:
        """Store the contents of these files: loose objects for a few, one pack for many.

        The files are read again; one that changed since it was hashed gets the
        sha of what was stored (returned by index path), one that vanished is
        dropped from ``entries``.
        """
        if len(items) < _PACK_FROM:
            changed: dict[str, str] = {}
            for name, path in items:
                try:
                    sha = self._put_loose(file_content(path, entries[name][0]))
                except OSError:
                    del entries[name]
                    continue
                if sha != entries[name][1]:
                    changed[name] = sha
            return changed
        return self._write_pack(items, entries)

    def _put_loose(self, data: bytes) -> str:
        header = b"blob %d\0" % len(data)
        sha = hashlib.sha1(header + data).hexdigest()
        target = self.git_dir / "objects" / sha[:2] / sha[2:]
        if not target.exists():
            private_dir(target.parent)
            fd, tmp = tempfile.mkstemp(prefix="tmp-", dir=target.parent)
            with os.fdopen(fd, "wb") as fh:
                fh.write(zlib.compress(header + data, 1))
            os.chmod(tmp, 0o400)
            os.replace(tmp, target)
        return sha

    def _write_pack(
        self, items: list[tuple[str, str]], entries: dict[str, Entry]
    ) -> dict[str, str]:
        """Stream the blobs as one pack into ``git index-pack`` (one file, not thousands)."""
        env = git_env()
        argv = git_argv(["index-pack", "--stdin"], cwd=self.git_dir, git_dir=self.git_dir, env=env)
        proc = subprocess.Popen(
            argv, cwd=self.git_dir, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )  # fmt: skip
        stdin = proc.stdin
        assert stdin is not None  # asked for with PIPE
        digest = hashlib.sha1()
        changed: dict[str, str] = {}

        def send(data: bytes) -> None:
            digest.update(data)
            stdin.write(data)

        try:
            send(b"PACK" + struct.pack(">II", 2, len(items)))
            for name, path in items:
                try:
                    data = file_content(path, entries[name][0])
                except OSError:
                    data = b""  # the count is promised: store an empty blob instead
                    del entries[name]
                sha = blob_sha(data)
                if name in entries and sha != entries[name][1]:
                    changed[name] = sha
                send(pack_entry_header(len(data)) + zlib.compress(data, 1))
            stdin.write(digest.digest())
            _, err = proc.communicate()
        except BrokenPipeError:
            _, err = proc.communicate()
        if proc.returncode != 0:
            message = err.decode("utf-8", "replace")
            raise CheckpointError(f"checkpoint store: git index-pack failed: {last_line(message)}.")
        return changed

    # --------------------------------------------------------------- queries

    def changed(self, a: str, b: str) -> set[str]:
        """Workspace paths whose content or mode differ between two snapshots."""
        args = ("diff-tree", "-r", "-z", "--name-only", "--no-renames", a, b, "--", FILES)
        out = self.git(*args, work_tree=False)
        return {n.removeprefix(FILES) for n in out.split("\0") if n}

    def entries(self, rev: str, prefix: str, only: set[str] | None = None) -> dict[str, Entry]:
        """Paths under ``prefix`` in a snapshot (all, or those in ``only``)."""
        out = self.git("ls-tree", "-r", "-z", "--full-tree", rev, "--", prefix, work_tree=False)
        found: dict[str, Entry] = {}
        for record in out.split("\0"):
            if not record:
                continue
            meta, _, path = record.partition("\t")
            mode, _, sha = meta.split(" ")
            rel = path.removeprefix(prefix)
            if only is None or rel in only:
                found[rel] = (mode, sha)
        return found

    def read_blobs(self, shas: Iterable[str]) -> dict[str, bytes]:
        """The contents of blobs, by sha."""
        wanted = sorted(set(shas))
        if not wanted:
            return {}
        request = "".join(f"{s}\n" for s in wanted).encode()
        raw = self.git_bytes("cat-file", "--batch", input=request, work_tree=False)
        blobs: dict[str, bytes] = {}
        pos = 0
        for sha in wanted:
            end = raw.index(b"\n", pos)
            header = raw[pos:end].split(b" ")
            if len(header) != 3:
                raise CheckpointError(
                    f"the checkpoint store lacks object {sha}; undo cannot go on."
                )
            size = int(header[2])
            blobs[sha] = raw[end + 1 : end + 1 + size]
            pos = end + 1 + size + 1
        return blobs
