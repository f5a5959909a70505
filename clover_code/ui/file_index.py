"""Workspace files for ``@`` completion: gitignore-aware, capped, fuzzy-matched.

Built off the UI thread (``FileIndex.build`` walks the tree); matching is a
plain subsequence match scored to prefer hits in the file name, at word
starts and in a row, like the pickers of editors.
"""

from __future__ import annotations

from pathlib import Path

MAX_FILES = 50_000


class FileIndex:
    """The workspace's files (relative POSIX paths), ignoring what git ignores."""

    def __init__(self, paths: list[str] | None = None) -> None:
        self.paths = paths or []
        self.capped = False

    @classmethod
    def build(cls, root: Path, limit: int = MAX_FILES) -> FileIndex:
        """Walk ``root`` (blocking: call it in a thread)."""
        from clover_code.fs.ignore import IgnoreRules, walk_tree

        index = cls()
        for entry in walk_tree(root, root, rules=IgnoreRules(root)):
            if entry.is_file:
                index.paths.append(entry.rel)
                if len(index.paths) >= limit:
                    index.capped = True
                    break
        return index

    def match(self, query: str, limit: int = 8) -> list[str]:
        """The best ``limit`` paths for ``query`` (all-lowercase query: case-insensitive)."""
        if not query:
            return sorted(self.paths, key=lambda p: (p.count("/"), p))[:limit]
        scored: list[tuple[float, str]] = []
        for path in self.paths:
            score = fuzzy_score(query, path)
            if score is not None:
                scored.append((score, path))
        scored.sort(key=lambda item: (-item[0], len(item[1]), item[1]))
        return [path for _, path in scored[:limit]]


def fuzzy_score(query: str, candidate: str) -> float | None:
    """How well ``query`` matches ``candidate`` as a subsequence; None when it does not."""
    fold = query.islower()
    text = candidate.lower() if fold else candidate
    name_start = candidate.rfind("/") + 1
    position = 0
    score = 0.0
    previous = -2
    for char in query:
        found = text.find(char, position)
        if found < 0:
            return None
        score += 1.0
        if found == previous + 1:
            score += 2.0
        if found == 0 or candidate[found - 1] in "/_-. ":
            score += 1.5
        if found >= name_start:
            score += 1.0
        previous = found
        position = found + 1
    return score - 0.01 * len(candidate)
