"""The review task given to the model, and the check its answer must pass.

The answer goes through ``--output-schema``'s machinery
(``outcome.output_schema``): the same JSON Schema validation, the same retry
messages, the same number of retries. ``ReviewSchema`` adds what a schema
cannot say: a finding's file must be one the diff changes or one that exists
in the repository.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from importlib import resources
from pathlib import Path, PurePosixPath
from string import Template
from typing import Any

from pydantic import ValidationError

from clover_code.outcome.output_schema import OutputSchema
from clover_code.review.diff import ReviewDiff
from clover_code.review.findings import Finding, ReviewAnswer, answer_schema

__all__ = ["ReviewSchema", "review_prompt", "review_schema"]

SCHEMA_NAME = Path("<review findings>")
"""What the review's schema is called where a schema file's path would be."""


def _template() -> Template:
    text = resources.files("clover_code").joinpath("prompts/review.md").read_text("utf-8")
    return Template(text)


def review_prompt(
    diff: ReviewDiff,
    instructions: list[tuple[str, str]],
    known: list[Finding] | None = None,
) -> str:
    """The review task: what is reviewed, the project's review instructions, the
    findings already reported (not to be reported again) and the diff."""
    guidance = "".join(
        f"\nThe project's review instructions, from {where} (follow them where they do not "
        f"contradict the rules above):\n\n{text.strip()}\n"
        for where, text in instructions
    )
    reported = ""
    if known:
        listed = "\n".join(f"- {f.where} ({f.severity}): {f.title}" for f in known)
        reported = (
            "\nThese findings were reported on an earlier review of this change; do not "
            f"report them again (report a problem only once):\n{listed}\n"
        )
    cut = " (parts cut to fit: read the files for the rest)" if diff.cut else ""
    files = f"{len(diff.files)} file{'s' if len(diff.files) != 1 else ''}{cut}"
    return _template().substitute(
        what=diff.what,
        instructions=guidance,
        known=reported,
        files=files,
        diff=diff.text.rstrip("\n"),
    )


@dataclass(frozen=True, slots=True)
class ReviewSchema(OutputSchema):
    """The findings schema, and the files a finding may name."""

    root: Path = Path()
    diff_files: frozenset[str] = frozenset()

    def instructions(self) -> str:
        """What the task says about the answer's shape."""
        text = json.dumps(self.schema, indent=2)
        return (
            "\n\nAnswer with only a JSON object (no other text, no code fence): a summary of "
            'the review and the findings, most serious first (an empty "findings" list when '
            f"you found no problem), valid against this JSON Schema:\n{text}\n"
        )

    def check(self, answer: str) -> tuple[Any, str | None]:
        """The schema's check, then the answer read as ``ReviewAnswer`` with every
        finding's file known."""
        value, problem = OutputSchema.check(self, answer)
        if problem is not None:
            return None, problem
        try:
            parsed = ReviewAnswer.model_validate(value)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = "/".join(str(part) for part in first["loc"]) or "the top level"
            return None, f"at {where}: {first['msg']}"
        for index, finding in enumerate(parsed.findings):
            if not self._known(finding.file):
                return None, (
                    f"at findings/{index}/file: {finding.file!r} is not a file this change "
                    "touches or one in the repository; give the path from the repository root"
                )
        return value, None

    def _known(self, name: str) -> bool:
        if name in self.diff_files:
            return True
        path = PurePosixPath(name)
        if path.is_absolute() or ".." in path.parts:
            return False
        return (self.root / path).is_file()


def review_schema(root: Path, diff: ReviewDiff) -> ReviewSchema:
    """The check a review's answer must pass, for a review of ``diff`` in ``root``."""
    return ReviewSchema(answer_schema(), SCHEMA_NAME, root, frozenset(diff.files))
