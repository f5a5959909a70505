"""What an edit would do, shown before it is allowed; and the edits the user allowed
for the rest of the session (one file, or all of them)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, BinaryIO, Literal

from pydantic import BaseModel

from clover_code.errors import CloverError
from clover_code.protocol import FileEdit
from clover_code.tools.base import Tool, ToolContext
from clover_code.tools.fileio import FileAccess

PREVIEWED = frozenset({"edit_file", "write_file"})
"""Tools whose every write goes through ``ToolContext.files`` (so a dry run writes nothing)."""


class _DryRun:
    """``FileAccess`` that reads the real files and writes nowhere (but keeps what
    would have been written)."""

    def __init__(self, inner: FileAccess) -> None:
        self._inner = inner
        self.written: dict[Path, bytes] = {}

    def open_read(self, path: Path) -> BinaryIO:
        return self._inner.open_read(path)

    def write_bytes(self, path: Path, data: bytes) -> None:
        self.written[path] = data


@dataclass(frozen=True, slots=True)
class EditPreview:
    """What an edit would do: the unified diff its result will show, and the whole
    file before (None: a new file) and after, for front ends that draw diffs
    themselves (an editor's permission dialog)."""

    diff: str
    path: Path
    before: str | None
    after: str


async def preview_edit(
    tool: Tool[Any], args: BaseModel, context: ToolContext
) -> EditPreview | None:
    """The change ``tool`` would make, found by a dry run; None for other tools, when
    the edit would fail, or when it is not one text file."""
    if tool.name not in PREVIEWED:
        return None
    files = _DryRun(context.files)
    # No language servers: they would check (and read back) a file not yet written.
    dry = replace(context, files=files, on_output=None, diagnostics=None)
    try:
        result = await tool.run(args, dry)
    except (CloverError, OSError):
        return None
    edit = result.display
    if not isinstance(edit, FileEdit) or not edit.diff or result.is_error:
        return None
    if len(files.written) != 1:
        return None
    ((path, data),) = files.written.items()
    try:
        after = data.decode()
        # Off the event loop: an editor's file access blocks on a round trip.
        before = await asyncio.to_thread(_read_text, context.files, path)
    except (UnicodeDecodeError, OSError):
        return None
    return EditPreview(diff=edit.diff, path=path, before=before, after=after)


def _read_text(files: FileAccess, path: Path) -> str | None:
    try:
        with files.open_read(path) as handle:
            return handle.read().decode()
    except FileNotFoundError:
        return None


@dataclass(slots=True)
class EditAllowance:
    """Edits allowed for the session by the user's answer to an approval."""

    all_edits: bool = False
    files: set[str] = field(default_factory=set)

    def covers(self, path: object) -> bool:
        """Whether an edit of ``path`` (None: not an edit) is already allowed."""
        if path is None:
            return False
        return self.all_edits or str(path) in self.files

    def remember(self, scope: Literal["file", "all"] | None, path: object) -> None:
        """Record a "this file" or "all edits" answer."""
        if scope == "all":
            self.all_edits = True
        elif scope == "file" and path is not None:
            self.files.add(str(path))
