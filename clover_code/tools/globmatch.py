"""Glob patterns for file names and paths, shared by the glob and grep tools.

Syntax: ``*`` matches within one path segment, ``**`` across segments (as a
whole segment: ``**/x``, ``a/**/x``, ``a/**``), ``?`` one character,
``[abc]`` / ``[!abc]`` a character class, ``{a,b}`` alternatives (nested
allowed), ``\\`` escapes. A pattern without ``/`` is matched against the file
name at any depth (``*.py``); a pattern with ``/`` against the whole path
relative to the directory searched (``src/**/*.ts``). ``*`` also matches a
leading dot.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable

__all__ = ["compile_glob", "expand_braces"]

_MAX_ALTERNATIVES = 256


def expand_braces(pattern: str) -> list[str]:
    """All alternatives of ``{a,b}`` groups, outermost first (``a{b,c}`` → ``ab``, ``ac``)."""
    depth = 0
    start = -1
    commas: list[int] = []
    i = 0
    while i < len(pattern):
        char = pattern[i]
        if char == "\\":
            i += 2
            continue
        if char == "{":
            if depth == 0:
                start = i
                commas = []
            depth += 1
        elif char == "," and depth == 1:
            commas.append(i)
        elif char == "}" and depth > 0:
            depth -= 1
            if depth == 0:
                if not commas:
                    # "{x}" has no alternatives; keep it literal and look further on.
                    rest = expand_braces(pattern[i + 1 :])
                    return [pattern[: i + 1] + tail for tail in rest]
                head, tail = pattern[:start], pattern[i + 1 :]
                bounds = [start, *commas, i]
                options = [pattern[a + 1 : b] for a, b in itertools.pairwise(bounds)]
                results: list[str] = []
                for option in options:
                    results.extend(expand_braces(head + option + tail))
                    if len(results) > _MAX_ALTERNATIVES:
                        return results[:_MAX_ALTERNATIVES]
                return results
        i += 1
    return [pattern]


def _class_end(pattern: str, i: int) -> int:
    """Index of the ``]`` closing the class opened at ``i``, or -1."""
    j = i + 1
    if j < len(pattern) and pattern[j] in "!^":
        j += 1
    if j < len(pattern) and pattern[j] == "]":
        j += 1
    while j < len(pattern) and pattern[j] != "]":
        j += 1
    return j if j < len(pattern) else -1


def _translate(pattern: str) -> str:
    out: list[str] = []
    i = 0
    n = len(pattern)
    while i < n:
        char = pattern[i]
        if char == "*":
            j = i
            while j < n and pattern[j] == "*":
                j += 1
            whole_segment = (i == 0 or pattern[i - 1] == "/") and (j == n or pattern[j] == "/")
            if j - i >= 2 and whole_segment:
                if j == n:
                    out.append(".*")
                else:
                    out.append("(?:[^/]*/)*")
                    j += 1  # the "/" is part of "**/"
            else:
                out.append("[^/]*")
            i = j
        elif char == "?":
            out.append("[^/]")
            i += 1
        elif char == "[":
            end = _class_end(pattern, i)
            if end < 0:
                out.append(re.escape(char))
                i += 1
                continue
            body = pattern[i + 1 : end]
            negate = body[:1] in ("!", "^")
            if negate:
                body = body[1:]
            escaped = "".join(c if c == "-" else re.escape(c) for c in body)
            out.append(f"[{'^/' if negate else ''}{escaped}]")
            i = end + 1
        elif char == "\\" and i + 1 < n:
            out.append(re.escape(pattern[i + 1]))
            i += 2
        else:
            out.append(re.escape(char))
            i += 1
    return "".join(out)


def compile_glob(pattern: str) -> Callable[[str], bool]:
    """A predicate telling whether a relative POSIX path matches ``pattern``.

    Raises ``ValueError`` for a pattern that cannot be compiled.
    """
    alternatives = expand_braces(pattern.strip())
    by_name: list[str] = []
    by_path: list[str] = []
    for alt in alternatives:
        alt = alt.removeprefix("./").lstrip("/")
        (by_path if "/" in alt else by_name).append(_translate(alt))
    try:
        name_re = re.compile("|".join(f"(?:{p})" for p in by_name)) if by_name else None
        path_re = re.compile("|".join(f"(?:{p})" for p in by_path)) if by_path else None
    except re.error as error:
        raise ValueError(f"glob pattern {pattern!r} is invalid ({error})") from error

    def matches(rel: str) -> bool:
        if name_re is not None and name_re.fullmatch(rel.rpartition("/")[2]):
            return True
        return path_re is not None and path_re.fullmatch(rel) is not None

    return matches
