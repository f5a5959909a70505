"""The ``read_file`` tool: a window of a text file, with line numbers."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import BinaryIO, ClassVar

from pydantic import BaseModel, ConfigDict, Field

from clover_code.errors import ToolError
from clover_code.fs.binary import BINARY_SAMPLE, looks_binary
from clover_code.protocol import FileRead
from clover_code.tools.base import Tool, ToolContext, ToolKind, ToolResult
from clover_code.tools.fileio import FileAccess, LocalFiles, missing_path_error
from clover_code.tools.lsp.attach import warm
from clover_code.tools.workspace import Workspace

__all__ = ["ReadFileArgs", "ReadFileTool"]

MAX_LINES = 2000
"""Most lines one call returns."""
MAX_BYTES = 256 * 1024
"""Most bytes of file text one call returns."""
MAX_LINE_CHARS = 2000
"""Longer lines are cut, with a note of how much is missing."""
_COUNT_LIMIT = 64 * 1024 * 1024
"""Files larger than this are not scanned to the end just to count lines."""


class ReadFileArgs(BaseModel):
    """Arguments of read_file."""

    model_config = ConfigDict(defer_build=True)
    """Built when a call is first validated (the schema is kept: ``schema_cache``)."""

    path: str = Field(description="The file to read, relative to the workspace root.")
    offset: int = Field(1, ge=1, description="The line number to start at (1 is the first line).")
    limit: int = Field(
        MAX_LINES, ge=1, description=f"How many lines to read (at most {MAX_LINES} per call)."
    )


def _count_remaining_lines(handle: BinaryIO) -> int:
    count = 0
    last = b""
    while chunk := handle.read(1 << 20):
        count += chunk.count(b"\n")
        last = chunk[-1:]
    return count + (1 if last not in (b"\n", b"") else 0)


def read_window(
    ws: Workspace, path: str, offset: int, limit: int, files: FileAccess | None = None
) -> ToolResult:
    """Read lines ``offset`` .. ``offset + limit - 1`` of ``path`` as numbered text."""
    resolved = ws.resolve(path)
    rel = ws.relative(resolved)
    if resolved.is_dir():
        raise ToolError(f"'{rel}' is a directory; use list_files to see what it contains")
    if not resolved.exists():
        raise missing_path_error(ws, path, resolved)
    if not resolved.is_file():
        raise ToolError(
            f"'{rel}' is not a regular file (a device, socket or pipe); it cannot be read"
        )
    limit = min(limit, MAX_LINES)
    try:
        handle = (files or LocalFiles()).open_read(resolved)
    except OSError as error:
        raise ToolError(f"could not read '{rel}': {error.strerror or error}") from error
    with handle:
        size = resolved.stat().st_size
        if looks_binary(handle.read(BINARY_SAMPLE)):
            raise ToolError(
                f"'{rel}' is a binary file ({size} bytes); read_file shows text files only"
            )
        handle.seek(0)
        out: list[str] = []
        used = 0
        last_line = 0
        line_no = 0
        more = False
        for raw in handle:
            line_no += 1
            if line_no < offset:
                continue
            if len(out) >= limit or used >= MAX_BYTES:
                more = True
                break
            text = raw.decode("utf-8", errors="replace").rstrip("\n").removesuffix("\r")
            if len(text) > MAX_LINE_CHARS:
                cut = len(text) - MAX_LINE_CHARS
                text = f"{text[:MAX_LINE_CHARS]}… [{cut} more characters on this line]"
            out.append(f"{line_no:>6}\t{text}")
            used += len(raw)
            last_line = line_no
        total: int | None = line_no
        if more:
            total = line_no + _count_remaining_lines(handle) if size <= _COUNT_LIMIT else None
    if line_no == 0:
        return ToolResult(f"'{rel}' is an empty file.", display=FileRead(path=rel, total_lines=0))
    if not out:
        raise ToolError(
            f"offset {offset} is past the end of '{rel}', which has {line_no} lines; "
            "use a smaller offset"
        )
    text = "\n".join(out)
    if more:
        of_total = f" of {total}" if total is not None else ""
        text += (
            f"\n[showing lines {offset}-{last_line}{of_total}; "
            f"call read_file with offset={last_line + 1} to read on]"
        )
    display = FileRead(path=rel, start=offset, end=last_line, total_lines=total)
    return ToolResult(text, display=display)


class ReadFileTool(Tool[ReadFileArgs]):
    """Reads a text file with line numbers."""

    name: ClassVar[str] = "read_file"
    description: ClassVar[str] = (
        "Read a text file from the workspace. Lines come numbered like `cat -n` "
        "(line number, a tab, then the line); the numbers are not part of the file. "
        f"At most {MAX_LINES} lines or {MAX_BYTES // 1024} KB come back per call; use "
        "offset and limit to read a long file in parts. Binary files are refused."
    )
    kind: ClassVar[ToolKind] = "read"
    Args = ReadFileArgs

    async def run(self, args: ReadFileArgs, ctx: ToolContext) -> ToolResult:
        """Read the requested window of the file."""
        workspace, files = ctx.workspace, ctx.files
        outside = _loaded_skill_folder(args.path, ctx.read_roots)
        if outside is not None:
            # Confined to that one folder, read from the disk (not an editor's buffers).
            workspace, files = Workspace(outside), LocalFiles()
        result = await asyncio.to_thread(
            read_window, workspace, args.path, args.offset, args.limit, files
        )
        if outside is None and isinstance(result.display, FileRead):
            warm(ctx, result.display.path)  # an edit may follow: have its server ready
        return result


def _loaded_skill_folder(path: str, roots: list[Path]) -> Path | None:
    """The loaded skill folder an absolute ``path`` names, if any."""
    if not roots or not os.path.isabs(path):
        return None
    lexical = Path(os.path.normpath(path))
    return next((root for root in roots if lexical.is_relative_to(root)), None)
