"""The two search back ends of the ``grep`` tool, and the shared output format.

Both feed matching and context lines, in walk order, into one ``Collector``,
which formats them and applies the caps, so their output is identical.
Known differences, both on unusual input: ripgrep and Python regex syntax
differ at the edges (a pattern ripgrep rejects is retried in Python), and a
file whose first NUL byte lies beyond its first 64 KB may be cut at a
different line.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import os
import re
import signal
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from clover_code.errors import ToolError
from clover_code.tools.workspace import Workspace

__all__ = [
    "MAX_LINE_CHARS",
    "Collector",
    "SearchPlan",
    "compile_pattern",
    "python_search",
    "rg_search",
    "rg_view_matches",
]

MAX_LINE_CHARS = 500
"""Longer result lines are cut."""
BINARY_WINDOW = 64 * 1024
"""A NUL byte in this many leading bytes makes a file binary (ripgrep's buffer size)."""
_RG_LINE_LIMIT = 64 * 1024 * 1024
_IGNORE_NAMES = (".gitignore", ".ignore", ".rgignore", ".git")


@dataclass(slots=True)
class SearchPlan:
    """One search, resolved: where to look, what to match, what to keep."""

    ws: Workspace
    start: Path
    pattern: str
    case_insensitive: bool
    context: int
    keep_file: Callable[[str], bool]
    respect_ignore: bool
    deadline: float
    stop: threading.Event = field(default_factory=threading.Event)

    def expired(self) -> bool:
        """Whether the search should stop now (cancelled or out of time)."""
        return self.stop.is_set() or time.monotonic() > self.deadline


@dataclass(slots=True)
class Collector:
    """Turns search events into the shared output format, applying the caps.

    Matching lines read ``path:line:text``, context lines ``path-line-text``,
    and with context a ``--`` line separates groups that do not touch.
    """

    context: int
    max_results: int
    output_limit: int
    lines: list[str] = field(default_factory=list)
    matches: int = 0
    files: set[str] = field(default_factory=set)
    more: bool = False
    """Further matches exist beyond ``max_results``."""
    cut: bool = False
    """The output reached ``output_limit`` characters."""
    _size: int = 0
    _prev: tuple[str, int] | None = None
    _stop_at: tuple[str, int] | None = None

    def add(self, rel: str, line_no: int, text: str, is_match: bool) -> bool:
        """Take one matching or context line; False once nothing more is wanted."""
        if self._stop_at is not None:
            stop_rel, stop_line = self._stop_at
            # Only the trailing context of the last match is still wanted.
            if is_match or rel != stop_rel or line_no > stop_line + self.context:
                self.more = True
                return False
        if self.context and self._prev is not None and self._prev != (rel, line_no - 1):
            self._emit("--")
        if len(text) > MAX_LINE_CHARS:
            text = f"{text[:MAX_LINE_CHARS]}… [{len(text) - MAX_LINE_CHARS} more characters]"
        sep = ":" if is_match else "-"
        self._emit(f"{rel}{sep}{line_no}{sep}{text}")
        self._prev = (rel, line_no)
        if is_match:
            self.matches += 1
            self.files.add(rel)
            if self.matches >= self.max_results:
                self._stop_at = (rel, line_no)
        if self._size > self.output_limit:
            self.cut = True
            return False
        return True

    def _emit(self, line: str) -> None:
        self.lines.append(line)
        self._size += len(line) + 1


def compile_pattern(pattern: str, case_insensitive: bool) -> re.Pattern[str]:
    """``pattern`` as a Python regex, or ``ToolError`` naming the problem."""
    try:
        return re.compile(pattern, re.IGNORECASE if case_insensitive else 0)
    except re.error as error:
        raise ToolError(
            f"pattern /{pattern}/ is not a valid regular expression: {error}"
        ) from error


def _printable(text: str) -> str:
    # File names that are not UTF-8 arrive with surrogate escapes; show them replaced.
    return text.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


# --- pure Python -----------------------------------------------------------------------


def _search_file(
    path: Path, rel: str, regex: re.Pattern[str], plan: SearchPlan, out: Collector
) -> bool:
    """Search one file; False when the collector wants nothing more."""
    try:
        handle = path.open("rb")
    except OSError:
        return True
    with handle:
        try:
            if b"\x00" in handle.read(BINARY_WINDOW):
                return True
            handle.seek(0)
            before: deque[tuple[int, str]] = deque(maxlen=plan.context or None)
            after_left = 0
            for line_no, raw in enumerate(handle, 1):
                if b"\x00" in raw or (line_no % 4096 == 0 and plan.expired()):
                    break
                # Like rg --crlf: "$" matches before a Windows line end too.
                line = raw.decode("utf-8", "replace").removesuffix("\n").removesuffix("\r")
                if regex.search(line):
                    for n, text in before:
                        if not out.add(rel, n, text, False):
                            return False
                    before.clear()
                    if not out.add(rel, line_no, line, True):
                        return False
                    after_left = plan.context
                elif after_left:
                    after_left -= 1
                    if not out.add(rel, line_no, line, False):
                        return False
                elif plan.context:
                    before.append((line_no, line))
        except OSError:
            return True
    return True


def python_search(plan: SearchPlan, out: Collector) -> None:
    """Search with Python's ``re``, walking the tree like ripgrep does."""
    regex = compile_pattern(plan.pattern, plan.case_insensitive)
    ws = plan.ws
    if plan.start.is_file():
        rel = _printable(ws.relative(plan.start))
        if plan.keep_file(rel):
            _search_file(plan.start, rel, regex, plan, out)
        return
    for entry in ws.walk(plan.start):
        if plan.expired():
            return
        if not entry.is_file:
            continue
        rel = _printable(entry.rel)
        if plan.keep_file(rel) and not _search_file(entry.path, rel, regex, plan, out):
            return


# --- ripgrep ---------------------------------------------------------------------------


def rg_view_matches(plan: SearchPlan) -> bool:
    """Whether ripgrep would read the same ignore files as ``python_search``.

    Searching the root, ripgrep is told not to read ignore files above it.
    Searching a subdirectory it must read the ones between the root and
    there, and would also read any above the root; then Python searches.
    """
    if plan.start == plan.ws.root or not plan.respect_ignore or not plan.start.is_dir():
        return True
    return not any(
        os.path.lexists(parent / name) for parent in plan.ws.root.parents for name in _IGNORE_NAMES
    )


def _rg_command(rg: str, plan: SearchPlan) -> list[str]:
    cmd = [
        rg,
        "--json",
        "--no-config",
        "--hidden",
        "--no-require-git",
        "--no-ignore-global",
        "--iglob",
        "!.git",
        "--sort",
        "path",
        "--encoding",
        "none",
        "--crlf",
    ]
    if plan.case_insensitive:
        cmd.append("--ignore-case")
    if plan.context:
        cmd += ["--context", str(plan.context)]
    if plan.start == plan.ws.root:
        cmd.append("--no-ignore-parent")
    if not plan.respect_ignore:
        cmd.append("--no-ignore")
    path_arg = "." if plan.start == plan.ws.root else plan.ws.relative(plan.start)
    return [*cmd, "--regexp", plan.pattern, "--", path_arg]


def _rg_text(value: dict[str, Any]) -> str:
    if "text" in value:
        return str(value["text"])
    return base64.b64decode(value["bytes"]).decode("utf-8", "replace")


def _rg_path(value: dict[str, Any]) -> str:
    if "text" in value:
        text = str(value["text"])
    else:
        text = _printable(os.fsdecode(base64.b64decode(value["bytes"])))
    return text.removeprefix("./")


async def rg_search(rg: str, plan: SearchPlan, out: Collector) -> bool:
    """Search with ripgrep; False when ripgrep failed before producing anything
    (for example a pattern its regex engine rejects), so Python should search."""
    try:
        proc = await asyncio.create_subprocess_exec(
            *_rg_command(rg, plan),
            cwd=plan.ws.root,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL,
            limit=_RG_LINE_LIMIT,
        )
    except OSError:
        return False
    assert proc.stdout is not None
    produced = False
    try:
        while True:
            remaining = plan.deadline - time.monotonic()
            if remaining <= 0:
                break
            try:
                raw = await asyncio.wait_for(proc.stdout.readline(), remaining)
            except TimeoutError:
                break
            except ValueError as error:
                raise ToolError(
                    "a matching line is too long to show; narrow the search with path or glob"
                ) from error
            if not raw:
                break
            try:
                event = json.loads(raw)
            except ValueError:
                continue
            kind = event.get("type")
            if kind not in ("match", "context"):
                continue
            produced = True
            data = event["data"]
            rel = _rg_path(data["path"])
            if not plan.keep_file(rel):
                continue
            text = _rg_text(data["lines"]).removesuffix("\n").removesuffix("\r")
            if not out.add(rel, int(data["line_number"]), text, kind == "match"):
                break
    finally:
        if proc.returncode is None and not proc.stdout.at_eof():
            # Stopped early. os.kill, not proc.kill: Popen.kill polls and may reap the
            # child behind asyncio's watcher, which then reports a bogus exit code.
            with contextlib.suppress(ProcessLookupError):
                os.kill(proc.pid, signal.SIGKILL)
        await proc.wait()
    return produced or proc.returncode != 2
