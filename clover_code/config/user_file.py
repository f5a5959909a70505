"""Changing one top-level string setting in the user's config file, keeping the rest.

The app saves a choice the user made there (the theme picked in the command
palette). The file is edited as text, so comments and layout stay: the
top-level ``key = ...`` line is replaced, or a new one is put before the
first table. The result is parsed before it is written (atomically), and it
is written only when it holds exactly the old settings with the new value;
anything else is one ``ConfigError`` sentence and the file stays as it was.
"""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path
from typing import Any

from clover_code.errors import ConfigError, ToolError
from clover_code.fs.atomic import atomic_write

__all__ = ["set_user_value"]

_TABLE = re.compile(r"^\s*\[")


def set_user_value(path: Path, key: str, value: str) -> None:
    """Set top-level ``key = "value"`` in the TOML file at ``path`` (created if missing)."""
    try:
        old_text = path.read_text(encoding="utf-8") if path.exists() else ""
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path} cannot be read ({exc}); {key} was not saved.") from None
    old = _parse(old_text, path, key)
    line = f"{key} = {json.dumps(value)}\n"
    lines = old_text.splitlines(keepends=True)
    mine = re.compile(rf"^\s*{re.escape(key)}\s*=")
    first_table = next((i for i, text in enumerate(lines) if _TABLE.match(text)), len(lines))
    at = next((i for i in range(first_table) if mine.match(lines[i])), None)
    if at is not None:
        lines[at] = line
    else:
        if first_table == len(lines) and lines and not lines[-1].endswith("\n"):
            lines[-1] += "\n"
        lines.insert(first_table, line)
    new_text = "".join(lines)
    if _parse(new_text, path, key) != {**old, key: value}:
        raise ConfigError(
            f"{path} could not be changed safely to set {key}; set {key} = {json.dumps(value)} "
            "in it yourself."
        )
    try:
        atomic_write(path, new_text.encode("utf-8"))
    except ToolError as exc:
        raise ConfigError(f"{path} cannot be written ({exc}); {key} was not saved.") from None


def _parse(text: str, path: Path, key: str) -> dict[str, Any]:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path} is not valid TOML ({exc}); {key} was not saved there.") from None
