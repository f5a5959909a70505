"""Screening a tool call's arguments before anything else looks at them.

A model (or whatever text it was fed) can put anything JSON carries into a
call: a NUL byte in a path, a lone UTF-16 surrogate, a list where a string
belongs, a hundred-megabyte string, an integer with a hundred digits, NaN,
keys the tool does not take. The argument model (pydantic) rejects wrong
types, but the rest would reach the permission check, the file system or a
subprocess and fail there with an exception nobody meant to handle.

``screen_arguments`` runs first, on the raw arguments, and returns one
sentence for the model when something is wrong, plus a copy of the
arguments that is safe to record and show (lone surrogates replaced, huge
strings cut, non-finite numbers nulled), whatever the verdict.

Caps, in UTF-8 bytes per string argument (``Tool.argument_limits``):
``CONTENT_LIMIT`` (1 MB) for file content, edits and patches,
``COMMAND_LIMIT`` (100 kB, under Linux's 128 KiB limit on one argument of
a program) for shell commands, and ``TEXT_LIMIT`` (4 kB, Linux's
``PATH_MAX``) for paths, patterns and every other built-in argument.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = [
    "COMMAND_LIMIT",
    "CONTENT_LIMIT",
    "MAX_DEPTH",
    "MAX_INTEGER",
    "MAX_ITEMS",
    "TEXT_LIMIT",
    "Screened",
    "human_size",
    "screen_arguments",
]

CONTENT_LIMIT = 1_000_000
"""Bytes in one file content, edit string or patch."""
COMMAND_LIMIT = 100_000
"""Bytes in one shell command."""
TEXT_LIMIT = 4096
"""Bytes in a path, pattern or other short argument."""
MAX_ITEMS = 10_000
"""Elements in one list or object inside the arguments."""
MAX_DEPTH = 16
"""Nesting of lists and objects inside the arguments."""
MAX_INTEGER = 2**53
"""Largest integer magnitude accepted (JSON's exactly representable range)."""

_KEPT_CHARS = 200
"""How much of an over-long string the recorded copy keeps."""


def human_size(count: int) -> str:
    """``count`` bytes in decimal units: ``"512 bytes"``, ``"1.5 kB"``, ``"512.3 MB"``."""
    if count < 1000:
        return f"{count} byte" + ("" if count == 1 else "s")
    value = float(count)
    for unit in ("kB", "MB", "GB", "TB"):
        value /= 1000
        if value < 999.95 or unit == "TB":
            return f"{value:.1f} {unit}"
    raise AssertionError("unreachable")


@dataclass(frozen=True, slots=True)
class Screened:
    """The verdict on a call's arguments.

    ``problem`` is one sentence for the model (None when the arguments may go
    on to the tool's own validation); ``arguments`` is a copy that is safe to
    record in the transcript and send to front ends either way.
    """

    arguments: dict[str, Any]
    problem: str | None


class _Screen:
    def __init__(self, limits: Mapping[str, int], default_limit: int) -> None:
        self.limits = limits
        self.default_limit = default_limit
        self.problem: str | None = None

    def flag(self, sentence: str) -> None:
        if self.problem is None:
            self.problem = sentence

    def value(self, value: Any, where: str, top: str, depth: int) -> Any:
        if isinstance(value, str):
            return self.text(value, where, top)
        if isinstance(value, bool) or value is None:
            return value
        if isinstance(value, int):
            if abs(value) > MAX_INTEGER:
                self.flag(
                    f"argument '{where}' is an integer of {len(str(abs(value)))} digits, far "
                    "outside any sensible range; send a small number."
                )
                return None
            return value
        if isinstance(value, float):
            if not math.isfinite(value):
                self.flag(f"argument '{where}' is {value}, not a finite number; send a number.")
                return None
            return value
        if isinstance(value, list | tuple | dict):
            return self.container(value, where, top, depth)
        self.flag(
            f"argument '{where}' is a {type(value).__name__}, which JSON cannot carry; "
            "send a string, number, boolean, list or object."
        )
        return None

    def container(self, value: Any, where: str, top: str, depth: int) -> Any:
        if depth >= MAX_DEPTH:
            self.flag(
                f"argument '{top}' nests lists and objects more than {MAX_DEPTH} levels deep; "
                "send a flatter value."
            )
            return None
        if len(value) > MAX_ITEMS:
            self.flag(
                f"argument '{where}' has {len(value):,} elements, more than the {MAX_ITEMS:,} "
                "allowed; send fewer."
            )
            value = list(value)[:_KEPT_CHARS] if not isinstance(value, dict) else {}
        if isinstance(value, dict):
            safe: dict[str, Any] = {}
            for key, item in value.items():
                name = self.text(str(key), f"{where}.<key>", top)
                safe[name] = self.value(item, f"{where}.{name}", top, depth + 1)
            return safe
        return [self.value(v, f"{where}[{i}]", top, depth + 1) for i, v in enumerate(value)]

    def text(self, value: str, where: str, top: str) -> str:
        try:
            size = len(value) if value.isascii() else len(value.encode("utf-8"))
        except UnicodeEncodeError as exc:
            self.flag(
                f"argument '{where}' contains an invalid Unicode character (a lone surrogate "
                f"at position {exc.start}); send valid UTF-8 text."
            )
            value = value.encode("utf-8", "replace").decode("utf-8")
            size = len(value.encode("utf-8"))
        limit = self.limits.get(top, self.default_limit)
        if size > limit:
            self.flag(
                f"argument '{where}' is {human_size(size)} long, over its limit of "
                f"{human_size(limit)}; send a shorter value (split the work into several calls)."
            )
            return value[:_KEPT_CHARS] + f"[... {human_size(size)} in all, cut here ...]"
        if "\0" in value:
            self.flag(
                f"argument '{where}' contains a NUL character (\\0), which no path, command or "
                "file text may hold; remove it and call again."
            )
        return value


def screen_arguments(
    arguments: object,
    *,
    limits: Mapping[str, int],
    default_limit: int = TEXT_LIMIT,
    known: Collection[str] | None = None,
) -> Screened:
    """Check raw call arguments for values no tool should ever receive.

    ``limits`` caps string arguments by top-level name (bytes), others get
    ``default_limit``; ``known`` (when given) lists the argument names the
    tool takes, and any other key is refused.
    """
    if not isinstance(arguments, dict):
        return Screened(
            {},
            f"the arguments are a JSON {type(arguments).__name__}, not an object; "
            "send one JSON object with the tool's arguments.",
        )
    screen = _Screen(limits, default_limit)
    safe: dict[str, Any] = {}
    for key, value in arguments.items():
        name = screen.text(str(key), "<argument name>", "<argument name>")
        if known is not None and key not in known and screen.problem is None:
            takes = ", ".join(sorted(known)) or "no arguments"
            screen.flag(f"unknown argument '{name[:80]}' (this tool takes: {takes}); drop it.")
        safe[name] = screen.value(value, name, name, 0)
    return Screened(safe, screen.problem)
