"""The project's review instructions: a ``review`` section of ``AGENTS.md`` (or
``CLOVER.md``), and ``.clover/review.md``.

They are text for the model, like ``AGENTS.md`` itself: they cannot widen
what a review may do (it runs ``read-only`` whatever they say), so they need
no trust record. ``.clover/review.md`` is one of the project's protected
control files (the agent's tools never write it without asking). A pull
request's review reads them from the base branch's checkout, never from the
pull request's head.
"""

from __future__ import annotations

import re
from pathlib import Path

__all__ = ["MAX_REVIEW_INSTRUCTION_CHARS", "REVIEW_FILE", "review_instructions"]

REVIEW_FILE = ".clover/review.md"
"""The project's own file of review instructions, relative to the workspace root."""
_SECTION_FILES = ("AGENTS.md", "CLOVER.md")
MAX_REVIEW_INSTRUCTION_CHARS = 20_000

_HEADING = re.compile(r"^(?P<level>#{1,6})[ \t]+(?P<title>.*?)[ \t#]*$")
_REVIEW_TITLE = re.compile(r"^(code[ \t]+)?review(s|ing)?\b", re.IGNORECASE)


def _read(path: Path) -> str | None:
    if path.is_symlink() or not path.is_file():
        return None  # a link could name a file outside the workspace
    try:
        return path.read_text("utf-8", errors="replace")
    except OSError:
        return None


def review_section(text: str) -> str:
    """The body of the first heading titled "Review" (or "Code review"), up to the next
    heading of the same or a higher level; "" when there is none."""
    lines = text.splitlines()
    for index, line in enumerate(lines):
        heading = _HEADING.match(line)
        if heading is None or not _REVIEW_TITLE.match(heading["title"]):
            continue
        level = len(heading["level"])
        body: list[str] = []
        fenced = False
        for following in lines[index + 1 :]:
            if following.lstrip().startswith("```"):
                fenced = not fenced
            deeper = _HEADING.match(following)
            if not fenced and deeper is not None and len(deeper["level"]) <= level:
                break
            body.append(following)
        return "\n".join(body).strip()
    return ""


def review_instructions(root: Path) -> list[tuple[str, str]]:
    """``(where, text)`` for each set of review instructions the project has."""
    found: list[tuple[str, str]] = []
    for name in _SECTION_FILES:
        text = _read(root / name)
        section = review_section(text) if text else ""
        if section:
            found.append((f"the review section of {name}", section))
    own = _read(root / REVIEW_FILE)
    if own and own.strip():
        found.append((REVIEW_FILE, own.strip()))
    return [(where, text[:MAX_REVIEW_INSTRUCTION_CHARS]) for where, text in found]
