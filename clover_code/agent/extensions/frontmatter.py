"""YAML front matter of Markdown files (skills and custom commands)."""

from __future__ import annotations

import re
from typing import Any

__all__ = [
    "MAX_DESCRIPTION",
    "FrontMatterError",
    "named_entry",
    "split_front_matter",
    "why_skipped",
]


class FrontMatterError(ValueError):
    """The front matter is not a YAML mapping; the message says why."""


def split_front_matter(text: str) -> tuple[dict[str, Any], str]:
    """The front matter (empty when there is none) and the body of a Markdown file."""
    text = text.removeprefix("\ufeff")
    lines = text.splitlines(keepends=True)
    if not lines or lines[0].strip() != "---":
        return {}, text
    for index in range(1, len(lines)):
        if lines[index].strip() in ("---", "..."):
            raw = "".join(lines[1:index])
            body = "".join(lines[index + 1 :])
            break
    else:
        raise FrontMatterError("the front matter that starts with '---' never ends")
    # Imported here: a session without skills, agents or commands never needs it.
    import yaml

    try:
        data = yaml.safe_load(raw)
    except yaml.YAMLError as exc:
        where = getattr(exc, "problem_mark", None)
        line = f" at line {where.line + 2}" if where is not None else ""
        raise FrontMatterError(f"the front matter is not valid YAML{line}") from None
    if data is None:
        return {}, body
    if not isinstance(data, dict):
        raise FrontMatterError("the front matter is not a mapping of keys to values")
    return {str(k): v for k, v in data.items()}, body


MAX_DESCRIPTION = 1024
"""Longest description a skill or agent may have (it goes into every system prompt)."""
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")


def named_entry(meta: dict[str, Any], default_name: str) -> tuple[str, str]:
    """The ``name`` (``default_name`` when absent) and the one-line ``description`` of a
    skill's or agent's front matter; ``FrontMatterError`` saying what is wrong."""
    name = meta.get("name", default_name)
    description = meta.get("description")
    if not isinstance(name, str) or not _NAME.match(name):
        raise FrontMatterError(
            "its name must be letters, digits, '.', '_' or '-' (at most 64 characters)"
        )
    if not isinstance(description, str) or not description.strip():
        raise FrontMatterError("its front matter has no description")
    description = " ".join(description.split())
    if len(description) > MAX_DESCRIPTION:
        raise FrontMatterError(f"its description is longer than {MAX_DESCRIPTION} characters")
    return name, description


def why_skipped(exc: Exception) -> str:
    """Why a skill or agent file was skipped, as a clause (``it ...``), from the error
    reading it raised: ``FrontMatterError``, ``OSError`` or ``UnicodeDecodeError``."""
    if isinstance(exc, UnicodeDecodeError):
        return "it is not UTF-8 text"
    if isinstance(exc, OSError):
        return f"it cannot be read ({exc.strerror or exc})"
    return str(exc)
