"""The ``list_files`` and ``glob`` tools: what is in the workspace.

Both skip what ``.gitignore`` (and ``.ignore``, ``.rgignore``,
``.git/info/exclude``) ignores and never show ``.git``. Paths in their output
are relative to the workspace root, so they can be passed to other tools.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import ClassVar

from pydantic import BaseModel, ConfigDict, Field

from clover_code.errors import ToolError
from clover_code.protocol import Listing
from clover_code.tools.base import Tool, ToolContext, ToolKind, ToolResult
from clover_code.tools.fileio import missing_path_error
from clover_code.tools.globmatch import compile_glob
from clover_code.tools.workspace import Workspace

__all__ = ["GlobArgs", "GlobTool", "ListFilesArgs", "ListFilesTool"]

MAX_ENTRIES = 500
"""Most entries ``list_files`` shows."""
MAX_MATCHES = 500
"""Most paths ``glob`` shows."""


def resolve_dir(ws: Workspace, path: str) -> Path:
    """The existing directory ``path`` names, or ``ToolError``."""
    resolved = ws.resolve(path)
    if not resolved.exists():
        raise missing_path_error(ws, path, resolved, what="directory")
    if not resolved.is_dir():
        raise ToolError(f"'{ws.relative(resolved)}' is a file, not a directory; use read_file")
    return resolved


class ListFilesArgs(BaseModel):
    """Arguments of list_files."""

    model_config = ConfigDict(defer_build=True)
    """Built when a call is first validated (the schema is kept: ``schema_cache``)."""

    path: str = Field(".", description="The directory to list, relative to the workspace root.")
    depth: int = Field(
        2, ge=1, le=50, description="How many levels to go down (1 lists only direct entries)."
    )


def list_entries(ws: Workspace, path: str, depth: int) -> ToolResult:
    """The entries below ``path``, up to ``depth`` levels, as text."""
    start = resolve_dir(ws, path)
    rel_start = ws.relative(start)
    lines: list[str] = []
    capped = False
    for entry in ws.walk(start, max_depth=depth):
        if len(lines) >= MAX_ENTRIES:
            capped = True
            break
        if entry.is_symlink:
            try:
                target = os.readlink(entry.path)
            except OSError:
                target = "?"
            lines.append(f"{entry.rel} -> {target}")
        else:
            lines.append(entry.rel + ("/" if entry.is_dir else ""))
    if not lines:
        return ToolResult(
            f"'{rel_start}' has no entries (ignored files are not listed).",
            display=Listing(path=rel_start, count=0),
        )
    text = "\n".join(lines)
    if capped:
        text += (
            f"\n[only the first {MAX_ENTRIES} entries are shown; list a subdirectory "
            "or use a smaller depth to see the rest]"
        )
    return ToolResult(text, display=Listing(path=rel_start, count=len(lines), capped=capped))


class ListFilesTool(Tool[ListFilesArgs]):
    """Lists a directory tree."""

    name: ClassVar[str] = "list_files"
    description: ClassVar[str] = (
        "List the files and directories under a directory of the workspace, sorted by path, "
        "directories marked with a trailing '/'. Files ignored by .gitignore are left out. "
        f"At most {MAX_ENTRIES} entries come back."
    )
    kind: ClassVar[ToolKind] = "read"
    Args = ListFilesArgs

    async def run(self, args: ListFilesArgs, ctx: ToolContext) -> ToolResult:
        """List the directory."""
        return await asyncio.to_thread(list_entries, ctx.workspace, args.path, args.depth)


class GlobArgs(BaseModel):
    """Arguments of glob."""

    model_config = ConfigDict(defer_build=True)
    """Built when a call is first validated (the schema is kept: ``schema_cache``)."""

    pattern: str = Field(
        description="A glob such as '**/*.py' or 'src/**/*.{ts,tsx}'. Without '/', it matches "
        "file names at any depth; with '/', paths relative to the search directory."
    )
    path: str = Field(".", description="The directory to search, relative to the workspace root.")


def glob_paths(ws: Workspace, pattern: str, path: str) -> ToolResult:
    """Files under ``path`` matching ``pattern``, newest first."""
    if os.path.isabs(pattern) and Path(pattern).is_relative_to(ws.root):
        pattern = Path(pattern).relative_to(ws.root).as_posix()
        path = "."
    try:
        matches = compile_glob(pattern)
    except ValueError as error:
        raise ToolError(str(error)) from error
    start = resolve_dir(ws, path)
    prefix = "" if start == ws.root else ws.relative(start) + "/"
    found: list[tuple[float, str]] = []
    for entry in ws.walk(start):
        if not entry.is_file:
            continue
        if matches(entry.rel.removeprefix(prefix)):
            try:
                mtime = entry.path.stat().st_mtime
            except OSError:
                continue
            found.append((mtime, entry.rel))
    rel_start = ws.relative(start)
    if not found:
        return ToolResult(
            f"No files match '{pattern}' in '{rel_start}' (ignored files are skipped).",
            display=Listing(path=rel_start, count=0),
        )
    found.sort(key=lambda item: (-item[0], item[1]))
    shown = [rel for _, rel in found[:MAX_MATCHES]]
    text = "\n".join(shown)
    if len(found) > MAX_MATCHES:
        text += (
            f"\n[{len(found) - MAX_MATCHES} more matches not shown; use a narrower pattern or path]"
        )
    return ToolResult(text, display=Listing(path=rel_start, count=len(found)))


class GlobTool(Tool[GlobArgs]):
    """Finds files by name pattern."""

    name: ClassVar[str] = "glob"
    description: ClassVar[str] = (
        "Find files whose path matches a glob pattern. Results are sorted by modification "
        "time, most recent first (ties by path), and skip files ignored by .gitignore. "
        f"At most {MAX_MATCHES} paths come back."
    )
    kind: ClassVar[ToolKind] = "search"
    Args = GlobArgs

    async def run(self, args: GlobArgs, ctx: ToolContext) -> ToolResult:
        """Run the search."""
        return await asyncio.to_thread(glob_paths, ctx.workspace, args.pattern, args.path)
