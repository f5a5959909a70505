"""A review's output: text for a person, the JSON result for a script, SARIF for
code-scanning pages.

The JSON result is the headless ``TaskResult`` (every field a script already
reads) plus the review's ``summary``, ``findings`` and what was ``reviewed``.
SARIF is version 2.1.0: one rule per severity, one result per finding with
its file and lines, and a fingerprint that stays the same while the finding
does (so a code-scanning page does not open it again on the next run).
"""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any
from urllib.parse import quote

from pydantic import Field

from clover_code import __version__
from clover_code.outcome.result import TaskResult, Text
from clover_code.review.findings import SEVERITIES, Finding, Severity, by_severity

__all__ = [
    "SARIF_SCHEMA_URI",
    "ReviewResult",
    "findings_text",
    "sarif_log",
]

SARIF_SCHEMA_URI = "https://json.schemastore.org/sarif-2.1.0.json"
INFORMATION_URI = "https://github.com/clover-code/clover-code"
FINGERPRINT_KEY = "cloverReview/v1"
"""The key of each result's ``partialFingerprints`` entry."""

_LEVELS: dict[Severity, str] = {"bug": "error", "risk": "warning", "nit": "note"}
_RULE_TEXT: dict[Severity, str] = {
    "bug": "The change makes the code behave wrongly.",
    "risk": "The change may break, is unsafe or misses a check.",
    "nit": "Style or clarity worth fixing.",
}


class ReviewResult(TaskResult):
    """What ``clover-code review --output-format json`` prints: the headless result of the
    review's run, plus what it found."""

    reviewed: Text = ""
    """What was reviewed, e.g. "the changes since origin/main (merge base 1a2b3c4d5e6f)"."""

    summary: Text = ""
    """The review's summary of the change ("" when the review did not finish)."""

    findings: list[Finding] = Field(default_factory=list)
    """The problems found, bugs first, then risks, then nits; [] when none (or on an error)."""

    repeated: int = 0
    """Findings the review reported again that ``--known`` lists: left out of ``findings``."""


def findings_text(result: ReviewResult) -> str:
    """The review as plain text: what was reviewed, each finding, the summary."""
    findings = result.findings
    count = f"{len(findings)} finding{'s' if len(findings) != 1 else ''}"
    lines = [f"Review of {result.reviewed}: {count}" if result.reviewed else count]
    for finding in findings:
        lines += ["", f"{finding.severity:<4}  {finding.where}  {finding.title}"]
        for paragraph in finding.body.strip().splitlines():
            wrapped = textwrap.wrap(paragraph, 94) or [""]
            lines += [f"      {piece}".rstrip() for piece in wrapped]
    if result.summary:
        lines += ["", f"Summary: {result.summary.strip()}"]
    return "\n".join(lines) + "\n"


def _rule(severity: Severity) -> dict[str, Any]:
    return {
        "id": f"review/{severity}",
        "name": severity.capitalize(),
        "shortDescription": {"text": f"Code review: {severity}"},
        "fullDescription": {"text": _RULE_TEXT[severity]},
        "defaultConfiguration": {"level": _LEVELS[severity]},
    }


def _sarif_result(finding: Finding) -> dict[str, Any]:
    region: dict[str, Any] = {"startLine": finding.line}
    if finding.last_line != finding.line:
        region["endLine"] = finding.last_line
    text = finding.title if not finding.body.strip() else f"{finding.title}\n\n{finding.body}"
    return {
        "ruleId": f"review/{finding.severity}",
        "ruleIndex": SEVERITIES.index(finding.severity),
        "level": _LEVELS[finding.severity],
        "message": {"text": text},
        "locations": [
            {
                "physicalLocation": {
                    "artifactLocation": {"uri": quote(finding.file), "uriBaseId": "%SRCROOT%"},
                    "region": region,
                }
            }
        ],
        "partialFingerprints": {FINGERPRINT_KEY: finding.fingerprint()},
    }


def sarif_log(result: ReviewResult, root: Path | None = None) -> dict[str, Any]:
    """The review as a SARIF 2.1.0 log; ``root`` (the workspace) anchors the files' paths."""
    invocation: dict[str, Any] = {
        "executionSuccessful": result.status == "success",
        "exitCode": result.exit_code,
    }
    if result.error:
        invocation["toolExecutionNotifications"] = [
            {"level": "error", "message": {"text": result.error}}
        ]
    run: dict[str, Any] = {
        "tool": {
            "driver": {
                "name": "clover-code",
                "version": __version__,
                "semanticVersion": __version__,
                "informationUri": INFORMATION_URI,
                "rules": [_rule(severity) for severity in SEVERITIES],
            }
        },
        "invocations": [invocation],
        "results": [_sarif_result(f) for f in by_severity(list(result.findings))],
    }
    if root is not None:
        run["originalUriBaseIds"] = {"%SRCROOT%": {"uri": root.resolve().as_uri() + "/"}}
    if result.summary:
        run["properties"] = {"summary": result.summary}
    return {"$schema": SARIF_SCHEMA_URI, "version": "2.1.0", "runs": [run]}
