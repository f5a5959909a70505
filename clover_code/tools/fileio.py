"""File helpers shared by the file tools: file access, text decoding, diffs
and "did you mean" hints for missing paths."""

from __future__ import annotations

import difflib
import os
from pathlib import Path
from typing import BinaryIO, Protocol

from clover_code.errors import ToolError
from clover_code.fs.atomic import atomic_write
from clover_code.fs.binary import BINARY_SAMPLE, looks_binary
from clover_code.tools.workspace import Workspace

__all__ = [
    "FileAccess",
    "LocalFiles",
    "decode_text",
    "diff_counts",
    "missing_path_error",
    "unified_diff",
]


def decode_text(data: bytes, display: str) -> str:
    """``data`` as UTF-8 text (a leading BOM kept), or ``ToolError`` if it is binary."""
    if looks_binary(data[:BINARY_SAMPLE]):
        raise ToolError(f"'{display}' is a binary file ({len(data)} bytes); it cannot be edited")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise ToolError(
            f"'{display}' is not valid UTF-8 (byte {error.start}); it cannot be edited as text"
        ) from error


class FileAccess(Protocol):
    """How the file tools reach file contents: the local disk, or an editor's buffers.

    Paths are absolute, real and already confined to the workspace. Methods
    are called from worker threads. Failures raise ``OSError`` or ``ToolError``.
    """

    def open_read(self, path: Path) -> BinaryIO:
        """The file's current content, as a binary stream the caller closes."""
        ...

    def write_bytes(self, path: Path, data: bytes) -> None:
        """Replace the file's content with ``data`` (creating it and its parents)."""
        ...


class LocalFiles:
    """``FileAccess`` on the local disk, writing atomically."""

    def open_read(self, path: Path) -> BinaryIO:
        """Open the file on disk."""
        return path.open("rb")

    def write_bytes(self, path: Path, data: bytes) -> None:
        """Write with ``atomic_write``."""
        atomic_write(path, data)


def unified_diff(old: str | None, new: str, rel: str) -> str:
    """A unified diff of a file's text; ``old`` None means the file is new."""
    old_lines = [] if old is None else old.splitlines(keepends=True)
    new_lines = new.splitlines(keepends=True)
    lines = difflib.unified_diff(
        old_lines,
        new_lines,
        fromfile="/dev/null" if old is None else f"a/{rel}",
        tofile=f"b/{rel}",
    )
    out: list[str] = []
    for line in lines:
        if line.endswith("\n"):
            out.append(line)
        else:
            out.append(line + "\n\\ No newline at end of file\n")
    return "".join(out)


def diff_counts(diff: str) -> tuple[int, int]:
    """Lines added and removed in a unified diff."""
    added = removed = 0
    for line in diff.splitlines():
        if line.startswith("+") and not line.startswith("+++"):
            added += 1
        elif line.startswith("-") and not line.startswith("---"):
            removed += 1
    return added, removed


def _similar_paths(ws: Workspace, target: Path, limit: int = 5) -> list[str]:
    """Existing paths that look like ``target``: near names in its nearest existing
    directory, then files of the same name elsewhere in the workspace."""
    found: list[str] = []
    parent = target.parent
    while not parent.is_dir() and parent != ws.root and ws.contains(parent):
        parent = parent.parent
    if parent.is_dir() and ws.contains(parent):
        try:
            names = [entry.name for entry in os.scandir(parent) if entry.name.casefold() != ".git"]
        except OSError:
            names = []
        wanted = target.relative_to(parent).parts[0] if target != parent else target.name
        for name in difflib.get_close_matches(wanted, names, n=limit, cutoff=0.6):
            found.append(ws.relative(parent / name))
    for seen, entry in enumerate(ws.walk()):
        if seen >= 20_000 or len(found) >= limit:
            break
        if entry.path.name == target.name and entry.rel not in found:
            found.append(entry.rel)
    return found[:limit]


def missing_path_error(ws: Workspace, given: str, resolved: Path, what: str = "file") -> ToolError:
    """A ``ToolError`` for a path that does not exist, naming similar paths if any."""
    hints = _similar_paths(ws, resolved)
    message = f"{what} '{given}' does not exist"
    if hints:
        message += "; did you mean " + ", ".join(f"'{h}'" for h in hints) + "?"
    else:
        message += "; use list_files or glob to find the right path"
    return ToolError(message)
