"""Reading patches: the Codex ``*** Begin Patch`` envelope and unified diffs.

Envelope grammar (one section per file, in any order)::

    *** Begin Patch
    *** Add File: path          then the new file's lines, each starting with "+"
    *** Delete File: path
    *** Update File: path
    *** Move to: new/path       (optional, right after Update File)
    @@ optional anchor line     then hunk lines: " " context, "-" removed, "+" added
    *** End of File             (optional: the hunk ends at the end of the file)
    *** End Patch

Unified diffs (``diff -u``, ``git diff``) are read from ``---`` / ``+++``
headers (``a/`` and ``b/`` prefixes dropped, ``/dev/null`` for added and
deleted files, git's ``rename from`` / ``rename to`` for moves) and
``@@ -l,n +l,n @@`` hunks, whose counts may be wrong: a hunk ends where the
next header starts.

Both readers are forgiving about what models do: a surrounding code fence or
``apply_patch <<'EOF'`` heredoc, a missing ``*** End Patch``, an empty line
where a context line lost its leading space, and CRLF line ends.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal

from clover_code.errors import ToolError

__all__ = ["FileChange", "Hunk", "parse_patch"]

_HUNK_HEADER = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
_ENVELOPE_ACTIONS = {
    "*** Add File: ": "add",
    "*** Delete File: ": "delete",
    "*** Update File: ": "update",
}


@dataclass(slots=True)
class Hunk:
    """One run of changed lines and the context around it.

    ``old`` and ``new`` are the lines before and after (context included),
    without line ends. ``anchors`` are lines to find first (the text after a
    Codex ``@@``); ``old_start`` is a unified diff's 1-based start line, used
    to choose between equal matches. ``no_newline`` is True when the new text
    ends the file without a final line end.
    """

    header: str
    old: list[str] = field(default_factory=list)
    new: list[str] = field(default_factory=list)
    ops: list[tuple[str, str]] = field(default_factory=list)
    """The hunk's lines in order as (marker, text), marker one of " ", "-", "+"."""
    anchors: list[str] = field(default_factory=list)
    old_start: int | None = None
    end_of_file: bool = False
    no_newline: bool = False


@dataclass(slots=True)
class FileChange:
    """What a patch does to one file."""

    action: Literal["add", "delete", "update"]
    path: str
    move_to: str | None = None
    hunks: list[Hunk] = field(default_factory=list)

    @property
    def paths(self) -> tuple[str, ...]:
        """Every path the change touches (a move touches two)."""
        return (self.path,) if self.move_to is None else (self.path, self.move_to)


def parse_patch(text: str) -> list[FileChange]:
    """The file changes in ``text``; ``ToolError`` naming the line that cannot be read."""
    lines = _unwrap(text.replace("\r\n", "\n").split("\n"))
    if not lines:
        raise ToolError("the patch is empty; give a *** Begin Patch envelope or a unified diff")
    if lines[0].strip() == "*** Begin Patch":
        changes = _parse_envelope(lines)
    else:
        changes = _parse_unified(lines)
    if not changes:
        raise ToolError("the patch names no files; nothing was changed")
    return changes


def _unwrap(lines: list[str]) -> list[str]:
    """Drop blank edges, a code fence and an ``apply_patch <<'EOF'`` heredoc."""
    while lines and not lines[0].strip():
        lines = lines[1:]
    while lines and not lines[-1].strip():
        lines = lines[:-1]
    if not lines:
        return lines
    if len(lines) >= 2 and lines[0].startswith("```") and lines[-1].strip() == "```":
        return _unwrap(lines[1:-1])
    heredoc = re.match(r"^(?:apply_patch|applypatch)?\s*<<\s*['\"]?(\w+)['\"]?\s*$", lines[0])
    if heredoc and len(lines) >= 2 and lines[-1].strip() == heredoc.group(1):
        return _unwrap(lines[1:-1])
    return lines


def _path(raw: str, lineno: int) -> str:
    path = raw.strip()
    if not path:
        raise ToolError(f"line {lineno} of the patch names no file")
    return path


def _parse_envelope(lines: list[str]) -> list[FileChange]:
    changes: list[FileChange] = []
    current: FileChange | None = None
    hunk: Hunk | None = None
    for index in range(1, len(lines)):
        line, lineno = lines[index], index + 1
        if line.strip() == "*** End Patch":
            rest = [extra for extra in lines[index + 1 :] if extra.strip()]
            if rest:
                raise ToolError(
                    f"line {lineno + 1} of the patch comes after '*** End Patch'; "
                    "put every file section inside the envelope"
                )
            break
        action = next(
            (a for prefix, a in _ENVELOPE_ACTIONS.items() if line.startswith(prefix)), None
        )
        if action is not None:
            prefix = next(p for p in _ENVELOPE_ACTIONS if line.startswith(p))
            current = FileChange(action, _path(line[len(prefix) :], lineno))  # type: ignore[arg-type]
            changes.append(current)
            hunk = Hunk("(new file)") if action == "add" else None
            if hunk is not None:
                current.hunks.append(hunk)
            continue
        if current is None:
            raise ToolError(
                f"line {lineno} of the patch is outside any file section; start one with "
                "'*** Add File: ', '*** Delete File: ' or '*** Update File: '"
            )
        if line.startswith("*** Move to: "):
            if current.action != "update" or current.hunks:
                raise ToolError(
                    f"line {lineno} of the patch: '*** Move to:' must directly follow "
                    "'*** Update File:'"
                )
            current.move_to = _path(line[len("*** Move to: ") :], lineno)
            continue
        if current.action == "delete":
            if line.strip():
                raise ToolError(
                    f"line {lineno} of the patch: a '*** Delete File:' section takes no lines"
                )
            continue
        if current.action == "add":
            assert hunk is not None
            if not line.startswith("+"):
                raise ToolError(
                    f"line {lineno} of the patch: every line of an added file starts with '+'"
                )
            hunk.new.append(line[1:])
            continue
        if line.startswith("@@"):
            anchor = line[2:].strip()
            if hunk is None or hunk.old or hunk.new:
                hunk = Hunk(line.strip())
                current.hunks.append(hunk)
            else:
                hunk.header += " " + line.strip()
            if anchor:
                hunk.anchors.append(anchor)
            continue
        if line.strip() == "*** End of File":
            if hunk is None:
                raise ToolError(f"line {lineno} of the patch: '*** End of File' ends no hunk")
            hunk.end_of_file = True
            continue
        if _blank_before_header(lines, index):
            continue
        if hunk is None:
            hunk = Hunk(f"hunk {len(current.hunks) + 1}")
            current.hunks.append(hunk)
        _hunk_line(hunk, line, lineno)
    for change in changes:
        if change.action == "update" and not change.hunks and change.move_to is None:
            raise ToolError(f"the patch updates '{change.path}' but gives no hunks for it")
    return changes


def _blank_before_header(lines: list[str], index: int) -> bool:
    """Whether ``lines[index]`` is empty and only blank lines or a header follow it:
    a separator the model left, not an empty context line."""
    if lines[index]:
        return False
    for line in lines[index + 1 :]:
        if line:
            return line.startswith(("*** ", "@@", "--- ", "diff "))
    return True


def _hunk_line(hunk: Hunk, line: str, lineno: int) -> None:
    marker, body = line[:1], line[1:]
    if marker == " " or line == "":
        hunk.old.append(body)
        hunk.new.append(body)
        hunk.ops.append((" ", body))
    elif marker == "-":
        hunk.old.append(body)
        hunk.ops.append(("-", body))
    elif marker == "+":
        hunk.new.append(body)
        hunk.ops.append(("+", body))
    else:
        raise ToolError(
            f"line {lineno} of the patch: hunk lines start with ' ' (context), '-' (removed) "
            f"or '+' (added), not {line[:20]!r}"
        )


def _diff_path(raw: str) -> str | None:
    path = raw.split("\t")[0].strip()
    if path.startswith('"') and path.endswith('"') and len(path) > 1:
        path = path[1:-1]
    if path == "/dev/null":
        return None
    if path.startswith(("a/", "b/")):
        path = path[2:]
    return path


def _parse_unified(lines: list[str]) -> list[FileChange]:
    changes: list[FileChange] = []
    current: FileChange | None = None
    hunk: Hunk | None = None
    rename_from: str | None = None
    renamed: FileChange | None = None  # made from git's rename headers, awaiting ---/+++
    index = 0
    while index < len(lines):
        line, lineno = lines[index], index + 1
        index += 1
        if line.startswith("--- ") and index < len(lines) and lines[index].startswith("+++ "):
            old, new = _diff_path(line[4:]), _diff_path(lines[index][4:])
            index += 1
            hunk = None
            if renamed is not None:
                current, renamed = renamed, None
                continue
            if old is None and new is None:
                raise ToolError(f"line {lineno} of the patch goes from /dev/null to /dev/null")
            if old is None:
                current = FileChange("add", _path(new or "", lineno))
            elif new is None:
                current = FileChange("delete", _path(old, lineno))
            else:
                # Without git's rename headers, differing names ("x.orig", "x") name
                # one file: the new name is the one to patch.
                current = FileChange("update", _path(new, lineno))
            changes.append(current)
            continue
        if line.startswith("diff "):
            current, hunk, rename_from, renamed = None, None, None, None
            continue
        if line.startswith("rename from "):
            rename_from = line[len("rename from ") :].strip()
            continue
        if line.startswith("rename to ") and rename_from is not None:
            target = line[len("rename to ") :].strip()
            current = renamed = FileChange("update", rename_from, move_to=target)
            changes.append(current)
            rename_from = None
            continue
        header = _HUNK_HEADER.match(line)
        if header:
            if current is None:
                raise ToolError(f"line {lineno} of the patch: a hunk comes before any '---'/'+++'")
            hunk = Hunk(line.strip(), old_start=int(header.group(1)))
            current.hunks.append(hunk)
            continue
        if hunk is None or current is None:
            if line.startswith(("index ", "new file mode", "deleted file mode", "old mode")):
                continue
            if line.startswith(("new mode", "similarity index", "Binary files")) or not line:
                continue
            if current is None:
                continue  # commentary before the first file, as git format-patch writes
            raise ToolError(f"line {lineno} of the patch is not part of a hunk: {line[:60]!r}")
        if line.startswith("\\"):
            # "\ No newline at end of file" after the new side's last line.
            previous = lines[index - 2] if index >= 2 else ""
            if not previous.startswith("-"):
                hunk.no_newline = True
            continue
        if _blank_before_header(lines, index - 1):
            continue
        _hunk_line(hunk, line, lineno)
    for change in changes:
        if change.action == "update" and not change.hunks and change.move_to is None:
            raise ToolError(f"the patch updates '{change.path}' but gives no hunks for it")
    return changes
