"""The ``write_file`` tool: create a file or replace its whole content."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import ClassVar

from pydantic import BaseModel, ConfigDict, Field

from clover_code.errors import ToolError
from clover_code.protocol import FileEdit
from clover_code.tools.arguments import CONTENT_LIMIT
from clover_code.tools.base import Tool, ToolContext, ToolKind, ToolResult
from clover_code.tools.fileio import FileAccess, LocalFiles, diff_counts, unified_diff
from clover_code.tools.lsp.attach import with_diagnostics
from clover_code.tools.workspace import Workspace

__all__ = ["WriteFileArgs", "WriteFileTool"]


class WriteFileArgs(BaseModel):
    """Arguments of write_file."""

    model_config = ConfigDict(defer_build=True)
    """Built when a call is first validated (the schema is kept: ``schema_cache``)."""

    path: str = Field(
        description="The file to write, relative to the workspace root; "
        "missing parent directories are created."
    )
    content: str = Field(description="The complete new content of the file.")


def write_text(
    ws: Workspace, path: str, content: str, files: FileAccess | None = None
) -> ToolResult:
    """Write ``content`` to ``path`` atomically and describe the change."""
    files = files or LocalFiles()
    resolved = ws.resolve(path, write=True)
    rel = ws.relative(resolved)
    old: str | None = None
    old_binary = False
    if resolved.exists():
        try:
            with files.open_read(resolved) as handle:
                old_bytes = handle.read()
        except OSError as error:
            raise ToolError(f"could not read '{rel}': {error.strerror or error}") from error
        try:
            old = old_bytes.decode("utf-8")
        except UnicodeDecodeError:
            old, old_binary = "", True
    if old == content and not old_binary:
        return ToolResult(
            f"{rel} already has this content; nothing changed.",
            display=FileEdit(path=rel, diff=""),
        )
    files.write_bytes(resolved, content.encode("utf-8"))
    lines = content.count("\n") + (1 if content and not content.endswith("\n") else 0)
    if old is None:
        diff = unified_diff(None, content, rel)
        text = f"Created {rel} ({lines} lines)."
    else:
        diff = unified_diff(old, content, rel)
        added, removed = diff_counts(diff)
        if old_binary:
            text = f"Replaced binary file {rel} with text ({lines} lines)."
        else:
            text = f"Wrote {rel} ({lines} lines, +{added} -{removed})."
    return ToolResult(text, display=FileEdit(path=rel, diff=diff, created=old is None))


class WriteFileTool(Tool[WriteFileArgs]):
    """Creates or overwrites a file."""

    name: ClassVar[str] = "write_file"
    description: ClassVar[str] = (
        "Create a file, or replace the whole content of an existing one, in the workspace. "
        "Prefer edit_file for changing part of an existing file. The write is atomic and "
        "keeps the file's permissions; parent directories are created as needed."
    )
    kind: ClassVar[ToolKind] = "edit"
    written_arguments: ClassVar[frozenset[str]] = frozenset({"content"})
    Args = WriteFileArgs
    argument_limits: ClassVar[Mapping[str, int]] = {"content": CONTENT_LIMIT}

    async def run(self, args: WriteFileArgs, ctx: ToolContext) -> ToolResult:
        """Write the file."""
        result = await asyncio.to_thread(
            write_text, ctx.workspace, args.path, args.content, ctx.files
        )
        return await with_diagnostics(result, ctx)
