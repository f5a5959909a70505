"""Nested AGENTS.md: instructions of sub-directories, added once the agent works there.

The root's ``AGENTS.md`` (and ``CLOVER.md``) are in the system prompt. When a
call reads or edits a file under a sub-directory, every instruction file in
the directories between the root and that file's directory is added to the
context once, after the call's result (as Codex does). The texts added so far
are kept here, so compaction can carry them into the compacted history.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from clover_code.agent.turn.instructions import INSTRUCTION_FILES, MAX_INSTRUCTION_CHARS
from clover_code.agent.turn.tool_call import ToolCall
from clover_code.engine.base import Message
from clover_code.engine.messages import content_text

__all__ = ["NestedInstructions", "touched_paths"]

_PATCH_PATH = (  # compiled on the first patch (``re``'s cache), not at every start
    r"(?m)^(?:\*\*\* (?:Add|Delete|Update) File: |\*\*\* Move to: |\+\+\+ (?:b/)?)(.+?)\s*$"
)
_FILE_TOOLS = frozenset({"read_file", "write_file", "edit_file"})


def touched_paths(tool: str, arguments: Mapping[str, Any]) -> list[str]:
    """The paths a file tool call read or edited, as the model named them."""
    if tool in _FILE_TOOLS and isinstance(arguments.get("path"), str):
        return [arguments["path"]]
    if tool == "apply_patch" and isinstance(arguments.get("patch"), str):
        return [m for m in re.findall(_PATCH_PATH, arguments["patch"]) if m != "/dev/null"]
    return []


class NestedInstructions:
    """Finds the instruction files of the directories a session works in, each once."""

    def __init__(self, root: Path) -> None:
        self.root = Path(os.path.realpath(root))
        self.seen: set[Path] = set()
        self.loaded: list[tuple[str, str]] = []
        """(workspace-relative file, text) for each file added so far, in order."""

    def discover(self, paths: Iterable[str]) -> list[tuple[str, str]]:
        """The instruction files not added before that apply to ``paths``."""
        found: list[tuple[str, str]] = []
        for given in paths:
            try:
                target = Path(os.path.realpath(self.root / given))
                if not target.is_relative_to(self.root) or target == self.root:
                    continue
                directory = target if target.is_dir() else target.parent
            except (OSError, ValueError):
                continue  # a path the file system refuses (too long, a NUL) has no folder
            chain: list[Path] = []
            while directory != self.root and directory.is_relative_to(self.root):
                chain.append(directory)
                directory = directory.parent
            for folder in reversed(chain):  # outermost first
                found += self._read(folder)
        self.loaded += found
        return found

    def _read(self, folder: Path) -> list[tuple[str, str]]:
        found = []
        for name in INSTRUCTION_FILES:
            path = folder / name
            if path in self.seen:
                continue
            self.seen.add(path)
            try:
                if not path.is_file():
                    continue
                text = path.read_text("utf-8", errors="replace")
            except OSError:
                continue
            if len(text) > MAX_INSTRUCTION_CHARS:
                text = text[:MAX_INSTRUCTION_CHARS] + f"\n[... {name} truncated ...]"
            found.append((path.relative_to(self.root).as_posix(), text.strip()))
        return found

    @staticmethod
    def render(files: Iterable[tuple[str, str]]) -> str:
        """The text that puts ``files`` in the model's context."""
        parts = []
        for rel, text in files:
            folder = rel.rsplit("/", 1)[0]
            parts.append(
                f"[Instructions from {rel}; they apply to files under {folder}/ "
                f"(follow them):]\n{text}"
            )
        return "\n\n".join(parts)

    def annotate(self, calls: Iterable[ToolCall]) -> list[str]:
        """Append newly found instructions to the results of the calls that led to
        them; return the files added (for a notice)."""
        added: list[str] = []
        for call in calls:
            if call.malformed:
                continue
            found = self.discover(touched_paths(call.name, call.arguments))
            if found:
                call.result = f"{call.result or ''}\n\n{self.render(found)}"
                added += [rel for rel, _ in found]
        return added

    def carry(self, history: list[Message]) -> None:
        """Put every file added so far into a compacted history's summary message,
        so the instructions outlive the tool results they came with."""
        summary = history[0].get("content") if history else None
        if not isinstance(summary, str):
            return
        kept = "\n".join(content_text(m) for m in history[1:])
        # A file whose result is still in the kept tail is there already.
        missing = [f for f in self.loaded if self.render([f]) not in kept]
        if missing:
            text = "Instructions of sub-directories added earlier (still in force):"
            history[0]["content"] = f"{summary}\n\n{text}\n\n{self.render(missing)}"
