"""The notes a map build reports: what it left out, and why, one sentence each."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from clover_code.repomap.languages import Grammar, language_title
from clover_code.repomap.parse import NO_GRAMMAR
from clover_code.repomap.tags import (
    SKIP_BINARY,
    SKIP_LARGE,
    SKIP_MINIFIED,
    SKIP_UNREADABLE,
    FileTags,
)

__all__ = ["collect"]


def _plural(count: int) -> str:
    return "1 file" if count == 1 else f"{count:,} files"


def _size(limit: int) -> str:
    if limit % (1 << 20) == 0:
        return f"{limit >> 20} MiB"
    if limit % (1 << 10) == 0:
        return f"{limit >> 10} KiB"
    return f"{limit:,} bytes"


def collect(
    files: Sequence[str],
    tags: Sequence[FileTags],
    grammar: Callable[[str], Grammar | str],
    capped: bool,
    max_files: int,
    max_file_bytes: int,
) -> list[str]:
    """Notes on the files of a build that the map could not use."""
    by_reason: dict[str, list[str]] = {}
    by_language: dict[str, list[str]] = {}
    for rel, file_tags in zip(files, tags, strict=True):
        if file_tags.skipped == NO_GRAMMAR:
            by_language.setdefault(file_tags.lang, []).append(rel)
        elif file_tags.skipped:
            by_reason.setdefault(file_tags.skipped, []).append(rel)
    notes: list[str] = []
    for lang, paths in sorted(by_language.items()):
        why = grammar(lang)
        reason = why if isinstance(why, str) else "its grammar could not be loaded"
        notes.append(
            f"skipped {_plural(len(paths))} of {language_title(lang)} (e.g. {paths[0]}): {reason}."
        )
    why_text = {
        SKIP_LARGE: f"larger than {_size(max_file_bytes)}, so taken for generated code",
        SKIP_BINARY: "binary content (NUL bytes), not source text",
        SKIP_MINIFIED: "minified (very long lines), so taken for generated code",
        SKIP_UNREADABLE: "they could not be read",
    }
    for reason, paths in sorted(by_reason.items()):
        text = why_text.get(reason, reason)
        notes.append(f"skipped {_plural(len(paths))} (e.g. {paths[0]}): {text}.")
    if capped:
        notes.append(
            f"the repository has more than {max_files:,} source files; the map covers the "
            f"{max_files:,} in the shallowest directories."
        )
    return notes
