"""A finding and the answer a review returns, with the JSON Schema the answer must match.

The model answers with a JSON object (a summary and a list of findings); the
schema it is checked against is generated from ``ReviewAnswer``, so the
model, the check and the code that reads the findings cannot drift apart.
"""

from __future__ import annotations

import hashlib
import re
from typing import Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, model_validator

from clover_code.config.field_docs import describe

__all__ = [
    "SEVERITIES",
    "Finding",
    "ReviewAnswer",
    "Severity",
    "answer_schema",
    "by_severity",
]

Severity = Literal["bug", "risk", "nit"]
"""bug: wrong behaviour; risk: may break or is unsafe; nit: style or clarity."""

SEVERITIES: tuple[Severity, ...] = get_args(Severity)
"""The severities, most serious first."""

_WORDS = re.compile(r"[^0-9a-z]+")


class Finding(BaseModel):
    """One problem the review found, at a line range of a file."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    file: str = Field(min_length=1, max_length=1000)
    """The file's path relative to the repository root, as the diff names it."""

    line: int = Field(ge=1)
    """The first line of the range, in the new version of the file."""

    end_line: int | None = Field(None, ge=1)
    """The last line of the range (null or absent: the range is one line)."""

    severity: Severity
    """bug (wrong behaviour), risk (may break, unsafe, missing check) or nit (style, clarity)."""

    title: str = Field(min_length=1, max_length=200)
    """One short sentence naming the problem."""

    body: str = Field("", max_length=8000)
    """Why it is a problem and how to fix it (Markdown)."""

    @model_validator(mode="after")
    def _ordered(self) -> Finding:
        if self.end_line is not None and self.end_line < self.line:
            raise ValueError(f"end_line {self.end_line} is before line {self.line}")
        return self

    @property
    def last_line(self) -> int:
        """The range's last line."""
        return self.end_line if self.end_line is not None else self.line

    @property
    def where(self) -> str:
        """``file:line`` or ``file:line-end``."""
        if self.last_line == self.line:
            return f"{self.file}:{self.line}"
        return f"{self.file}:{self.line}-{self.last_line}"

    def fingerprint(self) -> str:
        """A stable id of the problem: the file and the title's words, not the lines
        (which move when the code above them changes) nor the severity."""
        words = _WORDS.sub(" ", self.title.casefold()).strip()
        return hashlib.sha256(f"{self.file}\0{words}".encode()).hexdigest()[:16]


class ReviewAnswer(BaseModel):
    """What the model answers a review with."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    summary: str = Field(max_length=4000)
    """Two or three sentences on the change as a whole and the review's verdict."""

    findings: list[Finding] = Field(max_length=200)
    """The problems found, most serious first; an empty list when there are none."""


def answer_schema() -> dict[str, Any]:
    """The JSON Schema the model's answer is checked against (from ``ReviewAnswer``,
    each field described by its docstring)."""
    describe(Finding, ReviewAnswer)
    schema = ReviewAnswer.model_json_schema()
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", **schema}


def by_severity(findings: list[Finding]) -> list[Finding]:
    """``findings`` with bugs first, then risks, then nits (stable within each)."""
    return sorted(findings, key=lambda f: SEVERITIES.index(f.severity))
