"""The ``edit_file`` tool: replace an exact piece of text in a file."""

from __future__ import annotations

import asyncio
import difflib
import re
from collections.abc import Mapping
from typing import ClassVar

from pydantic import BaseModel, ConfigDict, Field

from clover_code.errors import ToolError
from clover_code.protocol import FileEdit
from clover_code.tools.arguments import CONTENT_LIMIT
from clover_code.tools.base import Tool, ToolContext, ToolKind, ToolResult
from clover_code.tools.fileio import (
    FileAccess,
    LocalFiles,
    decode_text,
    diff_counts,
    missing_path_error,
    unified_diff,
)
from clover_code.tools.lsp.attach import with_diagnostics
from clover_code.tools.workspace import Workspace

__all__ = ["EditFileArgs", "EditFileTool", "closest_match"]

_SNIPPET_CONTEXT = 3
_MAX_SNIPPET_LINES = 30
_CANDIDATES = 20
_LINE_NUMBER_PREFIX = re.compile(r"^\s*\d+\t")


class EditFileArgs(BaseModel):
    """Arguments of edit_file."""

    model_config = ConfigDict(defer_build=True)
    """Built when a call is first validated (the schema is kept: ``schema_cache``)."""

    path: str = Field(description="The file to edit, relative to the workspace root.")
    old_string: str = Field(
        description="The exact text to replace, including indentation and line breaks, "
        "without read_file's line numbers. It must occur exactly once unless replace_all is set."
    )
    new_string: str = Field(description="The text to put in its place.")
    replace_all: bool = Field(
        False, description="Replace every occurrence of old_string instead of exactly one."
    )


def _line_of(text: str, index: int) -> int:
    return text.count("\n", 0, index) + 1


def _numbered(lines: list[str], first: int) -> str:
    return "\n".join(f"{first + i:>6}\t{line}" for i, line in enumerate(lines))


def _occurrences(content: str, old: str) -> list[int]:
    starts: list[int] = []
    index = content.find(old)
    while index >= 0:
        starts.append(index)
        index = content.find(old, index + len(old))
    return starts


def closest_match(content: str, old: str) -> tuple[int, int, float, bool] | None:
    """The window of lines in ``content`` most like ``old``.

    Returns ``(first_line, last_line, similarity, whitespace_only)`` with
    1-based inclusive line numbers, or None when nothing is similar enough.
    Lines are compared with surrounding whitespace stripped, so
    ``whitespace_only`` says the window differs from ``old`` only in spacing.
    """
    lines = content.splitlines()
    wanted = [line.strip() for line in old.splitlines()] or [old.strip()]
    size = len(wanted)
    if not lines:
        return None
    target = "\n".join(wanted)
    matcher = difflib.SequenceMatcher(None, autojunk=False)
    matcher.set_seq2(target)
    stripped = [line.strip() for line in lines]
    scored: list[tuple[float, int]] = []
    for start in range(max(1, len(lines) - size + 1)):
        matcher.set_seq1("\n".join(stripped[start : start + size]))
        scored.append((matcher.quick_ratio(), start))
    scored.sort(key=lambda item: (-item[0], item[1]))
    best: tuple[float, int] | None = None
    for _, start in scored[:_CANDIDATES]:
        matcher.set_seq1("\n".join(stripped[start : start + size]))
        ratio = matcher.ratio()
        if best is None or ratio > best[0]:
            best = (ratio, start)
    if best is None or best[0] < 0.5:
        return None
    ratio, start = best
    last = min(start + size, len(lines))
    return start + 1, last, ratio, ratio == 1.0


def _not_found_message(content: str, old: str, rel: str) -> str:
    old_lines = old.splitlines()
    if old_lines and all(_LINE_NUMBER_PREFIX.match(line) for line in old_lines):
        return (
            f"old_string was not found in '{rel}'; it seems to start with read_file's "
            "line numbers, which are not part of the file, so leave them out"
        )
    found = closest_match(content, old)
    if found is None:
        return (
            f"old_string was not found in '{rel}' and no similar text is there; "
            "read the file again and copy the exact text to replace"
        )
    first, last, _, whitespace_only = found
    lines = content.splitlines()[first - 1 : last]
    one = first == last
    where = f"line {first}" if one else f"lines {first}-{last}"
    if whitespace_only:
        how = "differs only in whitespace" if one else "differ only in whitespace"
    else:
        how = "is the most similar text" if one else "are the most similar text"
    return (
        f"old_string was not found in '{rel}'; {where} {how}:\n"
        f"{_numbered(lines, first)}\n"
        "Copy the text exactly (indentation included, line numbers left out) and try again."
    )


def _snippet(content: str, first: int, last: int) -> str:
    lines = content.splitlines()
    start = max(1, first - _SNIPPET_CONTEXT)
    end = min(len(lines), last + _SNIPPET_CONTEXT, start + _MAX_SNIPPET_LINES - 1)
    return _numbered(lines[start - 1 : end], start)


def edit_text(
    ws: Workspace,
    path: str,
    old: str,
    new: str,
    replace_all: bool = False,
    files: FileAccess | None = None,
) -> ToolResult:
    """Replace ``old`` by ``new`` in ``path`` (once, or everywhere with ``replace_all``)."""
    files = files or LocalFiles()
    if not old:
        raise ToolError(
            "old_string is empty; give the exact text to replace, or use write_file "
            "to create a file"
        )
    if old == new:
        raise ToolError("old_string and new_string are identical, so there is nothing to change")
    resolved = ws.resolve(path, write=True)
    rel = ws.relative(resolved)
    if not resolved.exists():
        raise missing_path_error(ws, path, resolved)
    try:
        with files.open_read(resolved) as handle:
            data = handle.read()
    except OSError as error:
        raise ToolError(f"could not read '{rel}': {error.strerror or error}") from error
    content = decode_text(data, rel)
    starts = _occurrences(content, old)
    if not starts and "\r\n" in content and "\n" in old and "\r\n" not in old:
        # The model writes "\n"; the file uses Windows line ends. Keep the file's style.
        old, new = old.replace("\n", "\r\n"), new.replace("\n", "\r\n")
        starts = _occurrences(content, old)
    if not starts:
        raise ToolError(_not_found_message(content, old, rel))
    if len(starts) > 1 and not replace_all:
        line_numbers = ", ".join(str(_line_of(content, s)) for s in starts[:20])
        more = ", …" if len(starts) > 20 else ""
        raise ToolError(
            f"old_string occurs {len(starts)} times in '{rel}' (lines {line_numbers}{more}); "
            "include more surrounding lines to pick one, or set replace_all to true"
        )
    updated = content.replace(old, new) if replace_all else content.replace(old, new, 1)
    files.write_bytes(resolved, updated.encode("utf-8"))
    diff = unified_diff(content, updated, rel)
    added, removed = diff_counts(diff)
    count = len(starts)
    what = f"{count} occurrences" if count > 1 else "1 occurrence"
    text = f"Edited {rel}: replaced {what} (+{added} -{removed} lines)."
    if count == 1:
        first = _line_of(content, starts[0])
        last = first + new.count("\n")
        text += f" The changed part now reads:\n{_snippet(updated, first, last)}"
    return ToolResult(text, display=FileEdit(path=rel, diff=diff, replacements=count))


class EditFileTool(Tool[EditFileArgs]):
    """Replaces exact text in a file."""

    name: ClassVar[str] = "edit_file"
    description: ClassVar[str] = (
        "Edit a file by replacing an exact piece of text. old_string must match the file "
        "character for character (indentation and line breaks included, read_file's line "
        "numbers left out) and occur exactly once; include a few surrounding lines to make "
        "it unique, or set replace_all to change every occurrence. Read the file first."
    )
    kind: ClassVar[ToolKind] = "edit"
    written_arguments: ClassVar[frozenset[str]] = frozenset({"new_string"})
    Args = EditFileArgs
    argument_limits: ClassVar[Mapping[str, int]] = {
        "old_string": CONTENT_LIMIT,
        "new_string": CONTENT_LIMIT,
    }

    async def run(self, args: EditFileArgs, ctx: ToolContext) -> ToolResult:
        """Apply the replacement."""
        result = await asyncio.to_thread(
            edit_text,
            ctx.workspace,
            args.path,
            args.old_string,
            args.new_string,
            args.replace_all,
            ctx.files,
        )
        return await with_diagnostics(result, ctx)
