"""The ``grep`` tool: search file contents with a regular expression.

Two back ends give the same output: ripgrep (``rg``) when it is on PATH, and
a pure-Python search otherwise (or when ripgrep's view of the ignore files
could differ from ours, or it rejects a pattern Python accepts). Both walk
the tree the same way (names sorted, depth first, ``.git`` and ignored paths
skipped, symbolic links not followed, binary files skipped) and report
``path:line:text`` for matching lines and ``path-line-text`` for context
lines, with ``--`` between groups that do not touch. Paths are relative to
the workspace root.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field

from clover_code.errors import ToolError
from clover_code.fs.named_files import host_program
from clover_code.protocol import SearchResult
from clover_code.tools.base import Tool, ToolContext, ToolKind, ToolResult
from clover_code.tools.fileio import missing_path_error
from clover_code.tools.globmatch import compile_glob
from clover_code.tools.workspace import Workspace

if TYPE_CHECKING:
    from clover_code.tools.grep_backends import SearchPlan

__all__ = ["Backend", "GrepArgs", "GrepTool", "grep_files"]

SEARCH_SECONDS = 60.0
"""A search stops (keeping what it found) after this long."""

Backend = Literal["auto", "rg", "python"]


class GrepArgs(BaseModel):
    """Arguments of grep."""

    model_config = ConfigDict(defer_build=True)
    """Built when a call is first validated (the schema is kept: ``schema_cache``)."""

    pattern: str = Field(description="The regular expression to search for (one line at a time).")
    path: str = Field(
        ".", description="The directory or file to search, relative to the workspace root."
    )
    glob: str | None = Field(
        None,
        description="Only search files matching this glob, e.g. '*.py' or 'src/**/*.{ts,tsx}'.",
    )
    case_insensitive: bool = Field(False, description="Ignore letter case when matching.")
    context: int = Field(
        0, ge=0, le=20, description="How many lines to show before and after each match."
    )
    max_results: int = Field(100, ge=1, le=2000, description="Stop after this many matching lines.")


def _keep_all(rel: str) -> bool:
    return True


def _file_filter(ws: Workspace, start: Path, glob: str | None) -> Callable[[str], bool]:
    """Which result paths to keep: globs are matched relative to the searched directory."""
    if not glob:
        return _keep_all
    try:
        matches = compile_glob(glob)
    except ValueError as error:
        raise ToolError(str(error)) from error
    is_dir = start.is_dir()
    prefix = "" if start == ws.root or not is_dir else ws.relative(start) + "/"

    def keep(rel: str) -> bool:
        # A single file is matched by its name, as if its directory were searched.
        return matches(rel.removeprefix(prefix) if is_dir else rel.rpartition("/")[2])

    return keep


def _plan(ws: Workspace, args: GrepArgs) -> SearchPlan:
    from clover_code.tools.grep_backends import SearchPlan

    start = ws.resolve(args.path)
    if not start.exists():
        raise missing_path_error(ws, args.path, start, what="path")
    keep = _file_filter(ws, start, args.glob)
    respect = not (start.is_dir() and ws.ignore_rules().is_ignored_path(start))
    return SearchPlan(
        ws,
        start,
        args.pattern,
        args.case_insensitive,
        args.context,
        keep,
        respect,
        time.monotonic() + SEARCH_SECONDS,
    )


async def grep_files(
    ws: Workspace, args: GrepArgs, *, backend: Backend = "auto", output_limit: int = 30_000
) -> ToolResult:
    """Run a search and format its result; ``backend`` forces ripgrep or Python."""
    # The searches are loaded by the first one: most sessions search with other tools.
    from clover_code.tools.grep_backends import Collector, python_search, rg_search, rg_view_matches

    plan = _plan(ws, args)
    collector = Collector(args.context, args.max_results, output_limit)
    rg = host_program("rg", ws.root) if backend != "python" else None
    if backend == "rg" and rg is None:
        raise ToolError("ripgrep (rg) is not on PATH; install it or use the Python search")
    used = "python"
    if rg is not None and (backend == "rg" or rg_view_matches(plan)):
        if await rg_search(rg, plan, collector):
            used = "rg"
        else:
            collector = Collector(args.context, args.max_results, output_limit)
    if used == "python":
        try:
            await asyncio.to_thread(python_search, plan, collector)
        except asyncio.CancelledError:
            plan.stop.set()
            raise
    rel = ws.relative(plan.start)
    display = SearchResult(
        path=rel, matches=collector.matches, files=len(collector.files), backend=used
    )
    timed_out = time.monotonic() > plan.deadline
    if not collector.lines:
        note = " (the search ran out of time)" if timed_out else ""
        return ToolResult(f"No matches for /{args.pattern}/ in '{rel}'{note}.", display=display)
    text = "\n".join(collector.lines)
    if collector.more:
        text += (
            f"\n[stopped at {args.max_results} matching lines; narrow the pattern, path "
            "or glob, or raise max_results]"
        )
    elif collector.cut:
        text += "\n[output cut short; narrow the pattern, path or glob]"
    if timed_out:
        text += f"\n[the search stopped after {SEARCH_SECONDS:.0f} s; results are incomplete]"
    return ToolResult(text, display=display)


class GrepTool(Tool[GrepArgs]):
    """Searches file contents."""

    name: ClassVar[str] = "grep"
    description: ClassVar[str] = (
        "Search file contents in the workspace with a regular expression (the syntax "
        "common to Rust and Python regexes), line by line. "
        "Output lines are `path:line:text` (context lines `path-line-text`, groups "
        "separated by `--`), sorted by path then line. Files ignored by .gitignore and "
        "binary files are skipped. Use glob to restrict to some files."
    )
    kind: ClassVar[ToolKind] = "search"
    Args = GrepArgs

    def __init__(self, backend: Backend = "auto") -> None:
        self.backend: Backend = backend

    async def run(self, args: GrepArgs, ctx: ToolContext) -> ToolResult:
        """Run the search."""
        return await grep_files(
            ctx.workspace, args, backend=self.backend, output_limit=ctx.output_limit
        )
