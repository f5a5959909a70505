"""Watch mode (``clover-code --watch``): act on ``AI!`` / ``AI?`` comments in any editor.

The repository is watched with ``watchfiles``. When a changed file holds a
comment ending in ``AI!`` the agent carries out the instruction (edits
allowed as in headless mode); ``AI?`` gets an answer in the terminal
(read-only). The surrounding code goes with the instruction, and when the
turn ends the marker comment is removed from the file. One session serves
the whole run, so later instructions can refer to earlier ones. Files that
git ignores, ``.git`` and binary or very large files are skipped.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TextIO

from watchfiles import DefaultFilter, awatch

from clover_code import protocol as p
from clover_code.agent.approval import RefuseApprover
from clover_code.agent.session import Session, find_root
from clover_code.config import Settings
from clover_code.engine.select import open_backend
from clover_code.errors import CloverError, ExitCode, ToolError
from clover_code.fs.atomic import atomic_write
from clover_code.fs.ignore import IgnoreRules
from clover_code.headless import TextRenderer
from clover_code.watch.markers import Marker, find_markers, remove_marker

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
    try:
        backend = await open_backend(settings)
        session = await Session.open(
            settings,
            backend,
            root,
            emit=TextRenderer(out, err),
            approver=RefuseApprover(),
            approval_mode=settings.approval or "auto-edit",
        )
    except CloverError as exc:
        err.write(f"clover-code: {exc}\n")
        return int(exc.exit_code)
    watcher = Watcher(session, root, err)
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
            for path in sorted({Path(name) for _, name in changes}):
                await watcher.visit(path)
    finally:
        await asyncio.shield(session.close())
    return int(ExitCode.OK)


class Watcher:
    """Acts on the markers of changed files through one session."""

    def __init__(self, session: Session, root: Path, err: TextIO) -> None:
        self.session = session
        self.root = root
        self.err = err
        self._ignore = IgnoreRules(root)
        self._stuck: set[tuple[str, str, str]] = set()
        """Markers that could not be removed; not acted on again."""

    def _text(self, path: Path) -> str | None:
        try:
            if not path.is_file() or path.stat().st_size > MAX_FILE_BYTES:
                return None
            if self._ignore.is_ignored_path(path):
                return None
            return path.read_bytes().decode("utf-8")
        except (OSError, UnicodeDecodeError, ValueError):
            return None

    async def visit(self, path: Path) -> None:
        """Carry out every new marker in ``path``, one at a time."""
        rel = path.relative_to(self.root).as_posix() if path.is_relative_to(self.root) else None
        if rel is None or ".git" in Path(rel).parts:
            return
        self._ignore = IgnoreRules(self.root)  # .gitignore may have changed since
        while (text := self._text(path)) is not None:
            pending = [
                m for m in find_markers(text, path.name) if (rel, m.kind, m.text) not in self._stuck
            ]
            if not pending:
                return
            marker = pending[0]
            await self._run(rel, text, marker)
            self._remove(path, rel, marker)

    async def _run(self, rel: str, text: str, marker: Marker) -> p.TurnFinished:
        verb = "Doing" if marker.kind == "do" else "Answering"
        self.err.write(f"» {verb} {rel}:{marker.last}: {marker.text or '(no text)'}\n")
        self.err.flush()
        agent = self.session.agent
        mode = agent.approval_mode
        if marker.kind == "ask":
            await self.session.submit(p.SetApprovalMode(mode="read-only"))
        try:
            return await self.session.run_turn(instruction_prompt(rel, text, marker))
        finally:
            if agent.approval_mode != mode:
                await self.session.submit(p.SetApprovalMode(mode=mode))

    def _remove(self, path: Path, rel: str, done: Marker) -> None:
        text = self._text(path)
        if text is None:
            return
        for marker in find_markers(text, path.name):
            if (marker.kind, marker.text) == (done.kind, done.text):
                try:
                    atomic_write(path, remove_marker(text, marker, path.name).encode("utf-8"))
                except ToolError as exc:
                    self.err.write(f"could not remove the marker from {rel}: {exc}\n")
                    self._stuck.add((rel, done.kind, done.text))
                return


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
