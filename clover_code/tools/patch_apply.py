"""Applying a patch to the workspace, all files or none (the ``apply_patch`` tool's work).

Hunks are matched exactly, then with growing tolerance for whitespace
(trailing, then indentation, then any); an unmatched hunk is one error naming
the file, the hunk and the most similar lines. Every new file content is
computed and every path checked before the first write; the writes are atomic
one by one, and if one fails the files already written are put back as they
were. Loaded by the first patch: most sessions apply none.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from clover_code.errors import ToolError
from clover_code.fs.atomic import atomic_write
from clover_code.protocol import PatchApplied
from clover_code.tools.base import ToolResult
from clover_code.tools.edit_file import closest_match
from clover_code.tools.fileio import (
    decode_text,
    diff_counts,
    missing_path_error,
    unified_diff,
)
from clover_code.tools.patch_parse import FileChange, Hunk, parse_patch
from clover_code.tools.workspace import Workspace

__all__ = ["apply_hunks", "apply_patch"]

_TOLERANCES: list[tuple[str, Callable[[str], str]]] = [
    ("", lambda line: line),
    ("ignoring trailing whitespace", str.rstrip),
    ("ignoring indentation", str.strip),
    ("ignoring whitespace", lambda line: " ".join(line.split())),
]


def _numbered(lines: list[str], first: int) -> str:
    return "\n".join(f"{first + i:>6}\t{line}" for i, line in enumerate(lines))


def _find(
    lines: list[str], wanted: list[str], start: int, hint: int | None, at_end: bool
) -> tuple[int, str] | None:
    """Where ``wanted`` occurs in ``lines`` at or after ``start``, and how loosely."""
    size = len(wanted)
    for how, norm in _TOLERANCES:
        target = [norm(w) for w in wanted]
        normalized = [norm(line) for line in lines]
        found = [
            i
            for i in range(start, len(lines) - size + 1)
            if normalized[i] == target[0] and normalized[i : i + size] == target
        ]
        if at_end:
            found = [i for i in found if i + size == len(lines)] or found
        if found:
            if hint is not None:
                return min(found, key=lambda i: (abs(i - hint), i)), how
            return found[0], how
    return None


def _keep_context(hunk: Hunk, matched: list[str]) -> list[str]:
    """The hunk's new lines, with context lines as the file has them: a loose match
    must not rewrite the whitespace of lines the patch does not change."""
    result: list[str] = []
    index = 0
    for marker, text in hunk.ops:
        if marker == " ":
            result.append(matched[index])
            index += 1
        elif marker == "-":
            index += 1
        else:
            result.append(text.rstrip("\r"))
    return result


def _hunk_error(lines: list[str], hunk: Hunk, number: int, rel: str, start: int) -> ToolError:
    where = f"hunk {number} of '{rel}' ({hunk.header})"
    found = closest_match("\n".join(lines), "\n".join(hunk.old))
    if found is None:
        detail = " and nothing in the file is similar.\n"
    else:
        first, last, _, _ = found
        span = f"line {first}" if first == last else f"lines {first}-{last}"
        shown = _numbered(lines[first - 1 : last], first)
        detail = f"; the most similar text is at {span}:\n{shown}\n"
        if first - 1 < start:
            detail += "(that is before the previous hunk: hunks must be in file order)\n"
    return ToolError(
        f"{where} does not match the file{detail}Read the file again and make the context "
        "and '-' lines match it exactly; no file was changed."
    )


def apply_hunks(text: str, hunks: list[Hunk], rel: str) -> tuple[str, list[str]]:
    """``text`` with the hunks applied in order, and notes on loose matches."""
    crlf = "\r\n" in text
    body = text.replace("\r\n", "\n")
    ends_with_newline = body.endswith("\n") or not body
    lines = body.split("\n")
    if ends_with_newline:
        lines.pop()
    notes: list[str] = []
    position = delta = 0
    for number, hunk in enumerate(hunks, start=1):
        for anchor in hunk.anchors:
            located = _find(lines, [anchor], position, None, False)
            if located is None:
                raise ToolError(
                    f"hunk {number} of '{rel}': the line '{anchor}' after '@@' was not found "
                    f"(searching from line {position + 1}); no file was changed."
                )
            position = located[0] + 1
        old = [line.rstrip("\r") for line in hunk.old]
        new = [line.rstrip("\r") for line in hunk.new]
        hint = None if hunk.old_start is None else max(0, hunk.old_start - 1 + delta)
        if not old:
            if hunk.old_start is not None:
                at = min(len(lines), max(0, hunk.old_start + delta))
            else:
                at = position if hunk.anchors else len(lines)
        else:
            located = _find(lines, old, position, hint, hunk.end_of_file)
            if located is None:
                raise _hunk_error(lines, hunk, number, rel, position)
            at, how = located
            if how:
                notes.append(f"hunk {number} of {rel} matched {how}")
                new = _keep_context(hunk, lines[at : at + len(old)])
        lines[at : at + len(old)] = new
        delta += len(new) - len(old)
        position = at + len(new)
        if hunk.old_start is not None and position == len(lines):
            ends_with_newline = not hunk.no_newline
    result = "\n".join(lines) + ("\n" if ends_with_newline and lines else "")
    return (result.replace("\n", "\r\n") if crlf else result), notes


@dataclass(slots=True)
class _Step:
    """One file operation of a planned patch, with what it replaces."""

    path: Path
    data: bytes | None  # None deletes the file
    original: bytes | None  # None: the file did not exist
    mode: int | None = None


@dataclass(slots=True)
class _Plan:
    steps: list[_Step]
    diffs: list[str]
    summary: list[str]
    notes: list[str]
    paths: list[str]


def _read(path: Path, rel: str) -> bytes:
    try:
        return path.read_bytes()
    except OSError as error:
        raise ToolError(f"could not read '{rel}': {error.strerror or error}") from error


def _plan(ws: Workspace, changes: list[FileChange]) -> _Plan:
    """Check every path and compute every new content; nothing is written."""
    plan = _Plan([], [], [], [], [])
    seen: set[Path] = set()

    def claim(given: str) -> tuple[Path, str]:
        path = ws.resolve(given, write=True)
        rel = ws.relative(path)
        if path in seen:
            raise ToolError(
                f"the patch changes '{rel}' more than once; merge those changes into one section"
            )
        seen.add(path)
        plan.paths.append(rel)
        return path, rel

    for change in changes:
        path, rel = claim(change.path)
        exists = path.exists() or path.is_symlink()
        if change.action == "add":
            if exists:
                raise ToolError(
                    f"cannot add '{rel}': it already exists; update it instead, no file was changed"
                )
            hunk = change.hunks[0] if change.hunks else Hunk("")
            text = "\n".join(hunk.new) + ("\n" if hunk.new and not hunk.no_newline else "")
            plan.steps.append(_Step(path, text.encode("utf-8"), None))
            diff = unified_diff(None, text, rel)
            plan.summary.append(f"added {rel} (+{diff_counts(diff)[0]})")
            plan.diffs.append(diff)
            continue
        if not exists:
            raise missing_path_error(ws, change.path, path)
        data = _read(path, rel)
        mode = path.stat().st_mode & 0o7777
        if change.action == "delete":
            plan.steps.append(_Step(path, None, data, mode))
            with contextlib.suppress(ToolError):
                old_text = decode_text(data, rel)
                diff = unified_diff(old_text, "", rel).replace(f"+++ b/{rel}", "+++ /dev/null", 1)
                plan.diffs.append(diff)
            plan.summary.append(f"deleted {rel}")
            continue
        new_data = data
        diff = ""
        if change.hunks:
            old_text = decode_text(data, rel)
            new_text, notes = apply_hunks(old_text, change.hunks, rel)
            plan.notes.extend(notes)
            new_data = new_text.encode("utf-8")
            diff = unified_diff(old_text, new_text, rel)
        target, target_rel = path, rel
        if change.move_to is not None and ws.resolve(change.move_to, write=True) != path:
            target, target_rel = claim(change.move_to)
            if target.exists() or target.is_symlink():
                raise ToolError(
                    f"cannot move '{rel}' to '{target_rel}': '{target_rel}' already exists; "
                    "no file was changed"
                )
            plan.steps.append(_Step(target, new_data, None))
            plan.steps.append(_Step(path, None, data, mode))
            diff = diff.replace(f"+++ b/{rel}", f"+++ b/{target_rel}", 1)
            added, removed = diff_counts(diff)
            plan.summary.append(f"moved {rel} to {target_rel} (+{added} -{removed})")
        else:
            plan.steps.append(_Step(path, new_data, data, mode))
            added, removed = diff_counts(diff)
            plan.summary.append(f"updated {rel} (+{added} -{removed})")
        if diff:
            plan.diffs.append(diff)
    return plan


def _missing_dirs(ws: Workspace, path: Path) -> list[Path]:
    """Directories above ``path`` that a write would create, deepest first."""
    missing: list[Path] = []
    parent = path.parent
    while parent != ws.root and not parent.exists():
        missing.append(parent)
        parent = parent.parent
    return missing


def _commit(ws: Workspace, steps: list[_Step]) -> None:
    """Carry out the steps; if one fails, undo the ones done and raise."""
    done: list[_Step] = []
    created: list[Path] = []
    try:
        for step in steps:
            if step.data is None:
                try:
                    step.path.unlink()
                except OSError as error:
                    reason = error.strerror or str(error)
                    raise ToolError(f"could not delete {step.path}: {reason}") from error
            else:
                created.extend(_missing_dirs(ws, step.path))
                atomic_write(step.path, step.data)
            done.append(step)
    except ToolError as error:
        failed = _rollback(done, created)
        if failed:
            raise ToolError(
                f"{error}; the patch was stopped, and these files could not be restored: "
                + ", ".join(failed)
            ) from error
        raise ToolError(f"{error}; every file was restored, so nothing changed") from error


def _rollback(done: list[_Step], created: list[Path]) -> list[str]:
    failed: list[str] = []
    for step in reversed(done):
        try:
            if step.original is None:
                step.path.unlink(missing_ok=True)
            else:
                atomic_write(step.path, step.original)
                if step.mode is not None:
                    os.chmod(step.path, step.mode)
        except (OSError, ToolError):
            failed.append(str(step.path))
    for directory in created:
        with contextlib.suppress(OSError):
            directory.rmdir()
    return failed


def apply_patch(ws: Workspace, patch: str) -> ToolResult:
    """Apply ``patch`` to the workspace, all files or none."""
    plan = _plan(ws, parse_patch(patch))
    _commit(ws, plan.steps)
    text = "Applied the patch: " + "; ".join(plan.summary) + "."
    if plan.notes:
        text += " Note: " + "; ".join(plan.notes) + "."
    return ToolResult(text, display=PatchApplied(diff="".join(plan.diffs), paths=plan.paths))
