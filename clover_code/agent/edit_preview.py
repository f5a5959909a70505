"""What an edit would do, shown before it is allowed; and the edits the user allowed
for the rest of the session (one file, or all of them)."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import BinaryIO, Literal

from pydantic import BaseModel

from clover_code.errors import CloverError
from clover_code.protocol import FileEdit
from clover_code.tools.base import Tool, ToolContext
from clover_code.tools.fileio import FileAccess

PREVIEWED = frozenset({"edit_file", "write_file"})
"""Tools whose every write goes through ``ToolContext.files`` (so a dry run writes nothing)."""


class _DryRun:
    """``FileAccess`` that reads the real files and writes nowhere."""

    def __init__(self, inner: FileAccess) -> None:
        self._inner = inner

    def open_read(self, path: Path) -> BinaryIO:
        return self._inner.open_read(path)

    def write_bytes(self, path: Path, data: bytes) -> None:
        return None


async def preview_diff(tool: Tool, args: BaseModel, context: ToolContext) -> str | None:
    """The unified diff (with context) ``tool`` would make, the same one its result
    shows after it runs; None for other tools or when the edit would fail."""
    if tool.name not in PREVIEWED:
        return None
    dry = replace(context, files=_DryRun(context.files), on_output=None)
    try:
        result = await tool.run(args, dry)
    except (CloverError, OSError):
        return None
    edit = result.display
    return edit.diff if isinstance(edit, FileEdit) and edit.diff and not result.is_error else None


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
