"""Watch mode (``clover-code --watch``): act on ``AI!`` / ``AI?`` comments in any editor.

The repository is watched with ``watchfiles``. When a changed file holds a
comment ending in ``AI!`` the agent carries out the instruction (edits
allowed as in headless mode); ``AI?`` gets an answer in the terminal
(read-only). The surrounding code goes with the instruction, and when the
turn ends the marker comment is removed from the file. One session serves
the whole run, so later instructions can refer to earlier ones. Files that
git ignores, ``.git`` and binary or very large files are skipped.

Only instructions the user wrote are acted on (``provenance.py``): a file
whose content is what a turn left there (the agent's edits, its shell
commands, the marker's removal) starts no turn, and one save starts at most
one turn. A change that arrives while git moved (HEAD or the index: a merge,
pull, checkout or rebase) is not acted on until the user saves that file
themselves.
"""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TextIO

from watchfiles import DefaultFilter, awatch

from clover_code import protocol as p
from clover_code.agent.open import RefuseApprover, Session, SessionOptions, open_session
from clover_code.config.settings import ApprovalMode, Settings
from clover_code.errors import CloverError, ExitCode, ToolError
from clover_code.fs.atomic import atomic_write
from clover_code.fs.ignore import IgnoreRules
from clover_code.fs.workspace_root import find_root
from clover_code.headless.run import TextRenderer
from clover_code.watch.markers import Marker, find_markers, remove_marker
from clover_code.watch.provenance import AgentWrites, content_hash, git_state

__all__ = ["Watcher", "run_watch", "watch"]

MAX_FILE_BYTES = 1024 * 1024
"""Larger files are not scanned for markers."""
CONTEXT_LINES = 20
"""Lines of code shown above and below an instruction."""


def run_watch(settings: Settings, cwd: Path) -> int:
    """Watch ``cwd``'s repository until Ctrl+C; returns the exit code."""
    try:
        return asyncio.run(watch(settings, cwd))
    except KeyboardInterrupt:
        return int(ExitCode.OK)


async def watch(
    settings: Settings,
    cwd: Path,
    *,
    out: TextIO | None = None,
    err: TextIO | None = None,
    stop: asyncio.Event | None = None,
    ready: Callable[[], None] | None = None,
    debounce_ms: int = 400,
) -> int:
    """Run watch mode until ``stop`` is set (or the task is cancelled)."""
    out = out or sys.stdout
    err = err or sys.stderr
    root, _ = find_root(cwd)
    mode: ApprovalMode = settings.approval_or("auto-edit")
    render: Callable[[p.Event], None] = TextRenderer(out, err)
    forced = settings.managed.forced_telemetry
    if forced is not None:  # an administrator's collector gets every session's telemetry
        from clover_code.telemetry.spans import observed

        render = observed(render, forced)
    try:
        session = await open_session(
            settings,
            root,
            SessionOptions(emit=render, approver=RefuseApprover(), approval_mode=mode),
        )
    except CloverError as exc:
        err.write(f"clover-code: {exc}\n")
        return int(exc.exit_code)
    watcher = Watcher(session, root, err, mode=mode)
    err.write(
        f"Watching {root} for comments ending in AI! (do it) or AI? (answer it); Ctrl+C stops.\n"
    )
    err.flush()
    try:
        async for changes in awatch(
            root,
            watch_filter=DefaultFilter(),
            stop_event=stop,
            debounce=debounce_ms,
            rust_timeout=500,
            yield_on_timeout=True,
        ):
            if ready is not None:
                ready()
                ready = None
            through_git = watcher.git_moved()
            for path in sorted({Path(name) for _, name in changes}):
                await watcher.visit(path, through_git=through_git)
    finally:
        await asyncio.shield(session.close())
    return int(ExitCode.OK)


class Watcher:
    """Acts on the markers of changed files through one session."""

    def __init__(
        self, session: Session, root: Path, err: TextIO, *, mode: ApprovalMode = "auto-edit"
    ) -> None:
        self.session = session
        self.mode = mode
        """The session's approval mode (``AI?`` turns switch to read-only and back)."""
        self.root = root
        self.err = err
        self._ignore = IgnoreRules(root)
        self._stuck: set[tuple[str, str, str]] = set()
        """Markers that could not be removed; not acted on again."""
        self._agent = AgentWrites(root, MAX_FILE_BYTES)
        self._git = git_state(root)
        self._from_git: dict[str, tuple[str, int]] = {}
        """Files whose markers arrived through git: their content hash and mtime then."""

    def git_moved(self) -> bool:
        """Whether git moved (HEAD or the index) since the last look."""
        state = git_state(self.root)
        moved, self._git = state != self._git, state
        return moved

    def _text(self, path: Path) -> str | None:
        try:
            if not path.is_file() or path.stat().st_size > MAX_FILE_BYTES:
                return None
            if self._ignore.is_ignored_path(path):
                return None
            return path.read_bytes().decode("utf-8")
        except (OSError, UnicodeDecodeError, ValueError):
            return None

    async def visit(self, path: Path, *, through_git: bool = False) -> None:
        """Carry out the first new marker in ``path`` when the user wrote it (at most one
        turn per save); ``through_git``: the change came with git moving."""
        rel = path.relative_to(self.root).as_posix() if path.is_relative_to(self.root) else None
        if rel is None or ".git" in Path(rel).parts:
            return
        self._ignore = IgnoreRules(self.root)  # .gitignore may have changed since
        text = self._text(path)
        if text is None:
            return
        pending = [
            m for m in find_markers(text, path.name) if (rel, m.kind, m.text) not in self._stuck
        ]
        data = text.encode("utf-8")
        if not pending or self._agent.is_agents(rel, data):
            return  # nothing to do, or the markers are in text the agent wrote
        digest, mtime = content_hash(data), _mtime(path)
        if through_git or self._from_git.get(rel, ("", mtime)) == (digest, mtime):
            if self._from_git.get(rel) != (digest, mtime):
                self.err.write(
                    f"» {rel}: an AI comment arrived through git (HEAD or the index moved); "
                    "not acted on. Save the file yourself to have it carried out.\n"
                )
                self.err.flush()
            self._from_git[rel] = (digest, mtime)
            return
        self._from_git.pop(rel, None)  # saved by the user since it arrived: confirmed
        marker = pending[0]
        started = time.time_ns()
        try:
            await self._run(rel, text, marker)
        finally:
            self._agent.remember_between(started, time.time_ns())
            self._git = git_state(self.root)  # the turn's own commits are not git arriving
        self._remove(path, rel, marker)
        if len(pending) > 1:
            self.err.write(f"  {len(pending) - 1} more in {rel}: save it again for the next.\n")
            self.err.flush()

    async def _run(self, rel: str, text: str, marker: Marker) -> p.TurnFinished:
        verb = "Doing" if marker.kind == "do" else "Answering"
        self.err.write(f"» {verb} {rel}:{marker.last}: {marker.text or '(no text)'}\n")
        self.err.flush()
        if marker.kind == "ask":
            await self.session.submit(p.SetApprovalMode(mode="read-only"))
        prompt = p.UserInput(text=instruction_prompt(rel, text, marker))
        try:
            return await self.session.run_turn(prompt)
        finally:
            if marker.kind == "ask" and self.mode != "read-only":
                await self.session.submit(p.SetApprovalMode(mode=self.mode))

    def _remove(self, path: Path, rel: str, done: Marker) -> None:
        text = self._text(path)
        if text is None:
            return
        for marker in find_markers(text, path.name):
            if (marker.kind, marker.text) == (done.kind, done.text):
                data = remove_marker(text, marker, path.name).encode("utf-8")
                self._agent.remember(rel, data)  # the watcher's own write starts nothing
                try:
                    atomic_write(path, data)
                except ToolError as exc:
                    self.err.write(f"could not remove the marker from {rel}: {exc}\n")
                    self._stuck.add((rel, done.kind, done.text))
                return


def _mtime(path: Path) -> int:
    try:
        return path.stat().st_mtime_ns
    except OSError:
        return 0


def instruction_prompt(rel: str, text: str, marker: Marker) -> str:
    """What the model is told about one marker: the instruction and the code around it."""
    lines = text.splitlines()
    start = max(1, marker.first - CONTEXT_LINES)
    end = min(len(lines), marker.last + CONTEXT_LINES)
    numbered = "\n".join(f"{n:>6}\t{lines[n - 1]}" for n in range(start, end + 1))
    where = (
        f"line {marker.last}"
        if marker.first == marker.last
        else (f"lines {marker.first}-{marker.last}")
    )
    if marker.kind == "do":
        task = (
            "Carry out the instruction by editing the files (read more of them if you need to). "
            "Leave the marker comment itself alone: it is removed for you when you finish. "
            "End with one or two sentences saying what you changed."
        )
        mark = "AI!"
    else:
        task = "Answer the question in your reply. Do not edit any file."
        mark = "AI?"
    return (
        f"In {rel}, {where}, a comment ending in `{mark}` says:\n\n{marker.text}\n\n"
        f"The code around it ({rel}, lines {start}-{end}, numbered like read_file):\n"
        f"```\n{numbered}\n```\n\n{task}"
    )
