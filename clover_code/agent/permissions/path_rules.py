"""Path rules: the globs of the allow and deny lists, and the paths a call names.

- ``PathRule``: one pattern of a key (``"docs/**"``, ``".env"``, ``"*"``),
  where it was written, and its matcher; ``path_rule`` compiles one, a bad
  glob being one ``ConfigError``;
- ``paths_of``: the paths a tool call names (``path``, ``paths``, a patch's
  files);
- ``locate``: the forms of a path the rules are matched against, as given and
  as resolved against the workspace, so that a link cannot dodge a deny rule.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from clover_code.errors import ConfigError, ToolError
from clover_code.tools.globmatch import compile_glob

__all__ = ["PathRule", "locate", "path_rule", "paths_of"]


@dataclass(frozen=True, slots=True)
class PathRule:
    """One pattern of a permissions key read as a path glob (or domain rule)."""

    text: str
    where: str
    matches: Callable[[str], bool]


def path_rule(pattern: str, where: str) -> PathRule:
    """``pattern`` (written at ``where``) compiled; a bad glob is a ``ConfigError``."""
    if pattern == "*":
        return PathRule(pattern, where, lambda _path: True)
    try:
        matcher = compile_glob(pattern)
    except ValueError as error:
        raise ConfigError(f"{where} has a bad pattern: {error}.") from None
    return PathRule(pattern, where, matcher)


def paths_of(name: str, arguments: Mapping[str, Any]) -> list[str]:
    """The paths a call names: ``path`` / ``paths`` arguments, or a patch's files."""
    patch = arguments.get("patch")
    if isinstance(patch, str):
        from clover_code.tools.patch_parse import parse_patch  # the first patch loads it

        try:
            return [p for change in parse_patch(patch) for p in change.paths]
        except ToolError:
            return []
    found: list[str] = []
    value = arguments.get("path")
    if isinstance(value, str) and value:
        found.append(value)
    many = arguments.get("paths")
    if isinstance(many, list):
        found.extend(p for p in many if isinstance(p, str) and p)
    return found


def locate(root: Path, path: str) -> tuple[list[str], str | None]:
    """The forms of ``path`` rules are matched against, and its resolved form
    relative to ``root`` (None when it lies outside); ``root`` is already resolved."""
    joined = os.path.join(root, os.path.expanduser(path))
    forms: list[str] = []
    inside: str | None = None
    for index, candidate in enumerate((os.path.normpath(joined), os.path.realpath(joined))):
        target = Path(candidate)
        if target == root or target.is_relative_to(root):
            rel = target.relative_to(root).as_posix()
            forms.append(rel)
            if index == 1:
                inside = rel
        else:
            forms.append(target.as_posix().lstrip("/"))
    return forms, inside
