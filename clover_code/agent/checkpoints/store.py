"""Checkpoints of the workspace in a shadow git store, for ``/undo``, ``/rewind`` and ``/diff``.

Before each turn the workspace is snapshotted into a bare git repository in
the user data dir (``checkpoints/<hash of the root path>``), never in the
workspace, so an ``rm -rf`` inside the repository cannot take the undo data
with it (``shadow_store`` holds the storage details). The user's ``.git``,
HEAD, index and stash are never written, except to bring ``.git`` back.

What a snapshot holds:

- the files git would show: tracked, plus untracked and not ignored (by
  ``.gitignore``, ``.git/info/exclude`` or the global excludes file), so
  edits made by shell commands count too. Symbolic links are kept as links.
  Files over ``MAX_FILE_BYTES``, special files and the insides of nested
  repositories are left out, and undo never touches them;
- the ``.git`` directory itself (pre-turn snapshots only, when it is under
  ``MAX_GIT_BYTES``). Undo puts it back only when it is gone (``.git/HEAD``
  missing, as after ``rm -rf .git``): undo restores files, it never rewrites
  the history of a repository that is still there.

Undoing the last N turns restores exactly the paths the agent changed in them
(pre-turn vs post-turn snapshot) to their state before the first of them.
When the user changed one of those paths after the agent did (between the
turns, or since the last one ended), undo refuses and names the files,
unless forced. A directory that is not a git repository works the same way.
"""

from __future__ import annotations

import hashlib
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from clover_code.agent.checkpoints.shadow_store import (
    DOTGIT,
    FILES,
    MAX_FILE_BYTES,
    MAX_GIT_BYTES,
    CheckpointError,
    Entry,
    ShadowStore,
)
from clover_code.git.safe import last_line, run_git

__all__ = ["MAX_FILE_BYTES", "MAX_GIT_BYTES", "CheckpointError", "CheckpointStore"]


@dataclass(slots=True)
class _Turn:
    turn: int
    before: str
    """Commit of the snapshot taken before the turn."""
    after: str | None = None
    """Commit of the snapshot taken when the turn ended, if it did."""


class CheckpointStore:
    """Snapshots of one workspace for one session, and undo, diff and commit on them.

    All methods block (they run git); call them through ``asyncio.to_thread``.
    Each raises ``CheckpointError`` (one sentence) when it cannot do its job.
    """

    def __init__(self, root: Path, data_dir: Path, session_id: str = "default") -> None:
        if shutil.which("git") is None:
            raise CheckpointError("checkpoints need the git program; install git to enable undo.")
        self.root = root.resolve()
        key = hashlib.sha256(os.fsencode(self.root)).hexdigest()[:20]
        self.shadow = ShadowStore(self.root, data_dir / "checkpoints" / key, session_id)
        self._turns: list[_Turn] = []
        self._start: str | None = None
        self._start_files = b""
        """The first checkpoint's files (``ShadowStore.files_digest``)."""
        self._turn_end: tuple[str, bytes] | None = None
        """The tree of the last turn's end snapshot and its files' digest, while nothing
        was restored since."""

    @property
    def store(self) -> Path:
        """The shadow git directory."""
        return self.shadow.git_dir

    @property
    def turns(self) -> int:
        """How many turns can be undone."""
        return len(self._turns)

    def take_notices(self) -> list[str]:
        """Warnings gathered while snapshotting (``.git`` too large), each once."""
        notices, self.shadow.notices = self.shadow.notices, []
        return notices

    def snapshot(self, turn: int) -> str:
        """Record the workspace before ``turn`` starts; returns the checkpoint commit."""
        self._turn_end = None
        with self.shadow.operation():
            tree = self.shadow.capture(with_git=True)
            commit = self.shadow.commit(tree, f"before turn {turn}")
        self._turns.append(_Turn(turn, commit))
        if self._start is None:
            self._start, self._start_files = commit, self.shadow.files_digest
        return commit

    def end_turn(self, turn: int) -> None:
        """Record the workspace as the agent left it when ``turn`` ended (any status)."""
        self._turn_end = None
        if self._turns and self._turns[-1].turn == turn:
            with self.shadow.operation():
                tree = self.shadow.capture(with_git=False)
                self._turns[-1].after = self.shadow.commit(tree, f"after turn {turn}")
            self._turn_end = (tree, self.shadow.files_digest)

    def undo(self, turns: int = 1, force: bool = False) -> list[str]:
        """Put back what the agent changed in the last ``turns`` turns.

        Returns the paths restored or removed (and ``.git`` when it was put
        back). Raises ``CheckpointError`` when there are not that many turns,
        or when the user changed the same files since, unless ``force``.
        """
        if turns < 1 or turns > len(self._turns):
            count = len(self._turns)
            raise CheckpointError(
                f"cannot undo {turns} turn(s): {count} turn(s) of this session can be undone."
            )
        chosen = self._turns[-turns:]
        self._turn_end = None
        now = self.shadow.capture(with_git=False)
        agent: set[str] = set()
        user: set[str] = set()
        for i, t in enumerate(chosen):
            agent |= self.shadow.changed(t.before, t.after or now)
            following = chosen[i + 1].before if i + 1 < len(chosen) else now
            if t.after is not None:
                user |= self.shadow.changed(t.after, following)
        conflicts = sorted(agent & user)
        if conflicts and not force:
            names = ", ".join(conflicts[:8]) + (" and more" if len(conflicts) > 8 else "")
            raise CheckpointError(
                f"undo refused: you changed {names} after the agent did; "
                "add --force (/undo --force, /rewind N --force) to overwrite your changes too."
            )
        target = chosen[0].before
        want = self.shadow.entries(target, FILES, agent)
        have = self.shadow.entries(now, FILES, agent)
        changed = [p for p in agent if want.get(p) != have.get(p)]
        self._restore(changed, want)
        dot_git = self.root / ".git"
        if not (dot_git / "HEAD").exists():
            dotgit = self.shadow.entries(target, DOTGIT)
            if dotgit:
                if dot_git.is_symlink() or (dot_git.exists() and not dot_git.is_dir()):
                    dot_git.unlink()  # never restore through a link the agent left there
                self._write(dot_git, dotgit)
                changed.append(".git")
        del self._turns[-turns:]
        return sorted(changed)

    def first_of_last(self, turns: int) -> int | None:
        """The number of the oldest of the newest ``turns`` turns (None if there are fewer)."""
        return self._turns[-turns].turn if 0 < turns <= len(self._turns) else None

    def turns_to_last_change(self) -> tuple[int, int]:
        """``(turns, turn)``: how many of the newest turns to undo so that the newest turn
        that changed files is undone, and that turn's number; ``(0, 0)`` when no turn
        that can be undone changed a file."""
        now: str | None = None
        for back, t in enumerate(reversed(self._turns), 1):
            after = t.after
            if after is None:
                now = now or self.shadow.capture(with_git=False)
                after = now
            if self.shadow.changed(t.before, after):
                return back, t.turn
        return 0, 0

    def diff_since_session_start(self, *, as_turn_left: bool = False) -> tuple[str, list[str]]:
        """The unified diff of the workspace since the first checkpoint, and its paths.

        ``as_turn_left``: of the workspace as the last turn left it, its end
        snapshot serving (when it has one, and nothing was restored since)
        instead of a new one; for a caller that knows nothing has changed it.
        """
        if self._start is None:
            return "", []
        with self.shadow.operation():
            if as_turn_left and self._turn_end is not None:
                now, digest = self._turn_end
            else:
                now, digest = self.shadow.capture(with_git=False), self.shadow.files_digest
            if digest == self._start_files:
                return "", []  # the files the session started with: git would find no change
            base = f"{self._start}^{{tree}}"
            git = self.shadow.git
            names = git("diff", "--name-only", "-z", "--no-renames", base, now, "--", FILES)
            files = [n.removeprefix(FILES) for n in names.split("\0") if n]
            if not files:
                return "", []
            diff = git("diff", "--no-color", f"--relative={FILES}", base, now, "--", FILES)
        return diff, files

    def auto_commit(self, message: str) -> str | None:
        """Commit what the agent changed this session on the current branch.

        ``message`` is the subject; the changed files are listed in the body.
        Returns the new commit, or None when nothing changed. Runs through
        the hardened git, so no hook or repository-configured program runs.
        """
        _, files = self.diff_since_session_start()
        if not files:
            return None
        if not (self.root / ".git").exists():
            msg = f"--auto-commit needs a git repository, and {self.root} is not one."
            raise CheckpointError(msg)
        paths = "".join(f"{f}\0" for f in files)
        add = ("--literal-pathspecs", "add", "-A", "--pathspec-from-file=-", "--pathspec-file-nul")
        self._user_git(*add, input=paths)
        ident: tuple[str, ...] = ()
        if run_git("config", "user.email", cwd=self.root, check=False).returncode != 0:
            ident = ("-c", "user.name=clover-code", "-c", "user.email=clover-code@localhost")
        body = "\n".join(f"- {f}" for f in files[:50])
        more = f"\n- and {len(files) - 50} more" if len(files) > 50 else ""
        subject = message.strip() or "clover-code changes"
        full = f"{subject}\n\nChanged by clover-code:\n{body}{more}\n"
        # Plumbing rather than `git commit`: porcelain commit looks inside every
        # submodule (a status run there, with that repository's own filters).
        tree = self._user_git("write-tree").strip()
        head = run_git("rev-parse", "-q", "--verify", "HEAD^{commit}", cwd=self.root, check=False)
        parent = head.stdout.strip() if head.returncode == 0 else ""
        if parent and self._user_git("rev-parse", f"{parent}^{{tree}}").strip() == tree:
            return None
        parents = ("-p", parent) if parent else ()
        commit = self._user_git(*ident, "commit-tree", tree, *parents, "-F", "-", input=full)
        commit = commit.strip()
        reflog = f"commit: {subject.splitlines()[0]}"
        self._user_git("update-ref", "-m", reflog, "HEAD", commit, parent)
        return commit

    # --------------------------------------------------------------- restore

    def _restore(self, paths: list[str], want: dict[str, Entry]) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        for rel in sorted(paths, key=lambda r: r.count("/"), reverse=True):
            if rel not in want:
                path = self.root / rel
                if path.is_symlink() or path.is_file():
                    path.unlink()
                elif path.is_dir():
                    shutil.rmtree(path)
                self._prune(path.parent)
        self._write(self.root, {p: want[p] for p in paths if p in want})

    def _prune(self, directory: Path) -> None:
        """Remove ``directory`` and its parents below the root while they are empty."""
        while directory != self.root and directory.is_relative_to(self.root):
            try:
                directory.rmdir()
            except OSError:
                return
            directory = directory.parent

    def _write(self, base: Path, entries: dict[str, Entry]) -> None:
        """Write snapshot entries below ``base`` atomically, never through a link."""
        blobs = self.shadow.read_blobs(sha for _, sha in entries.values())
        real_base = os.path.realpath(self.root)
        for rel, (mode, sha) in sorted(entries.items()):
            path = base / rel
            part = base
            for name in Path(rel).parts[:-1]:
                part = part / name
                if part.is_symlink() or (part.exists() and not part.is_dir()):
                    part.unlink()  # something the agent put where a directory was
            path.parent.mkdir(parents=True, exist_ok=True)
            if not Path(os.path.realpath(path.parent)).is_relative_to(real_base):
                raise CheckpointError(f"cannot restore {rel}: its directory leads outside {base}.")
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path)
            data = blobs[sha]
            if mode == "120000":
                path.unlink(missing_ok=True)
                os.symlink(os.fsdecode(data), path)
                continue
            tmp = path.parent / f".clover-undo-{os.getpid()}-{path.name}"
            tmp.write_bytes(data)
            os.chmod(tmp, 0o755 if mode == "100755" else 0o644)
            os.replace(tmp, path)

    def _user_git(self, *args: str, input: str | None = None) -> str:
        proc = run_git(*args, cwd=self.root, input=input, check=False)
        if proc.returncode != 0:
            words = [a for i, a in enumerate(args) if args[i - 1 : i] != ("-c",)]
            command = next(a for a in words if not a.startswith("-"))
            raise CheckpointError(f"git {command} failed: {last_line(proc.stderr)}.")
        return proc.stdout
