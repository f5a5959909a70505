"""A pull request's review on GitHub: its diff from the API, the findings posted before,
and the review to post (a summary and inline comments).

Each posted finding carries a hidden marker with its fingerprint
(``<!-- clover-review:0123abcd... -->``) in its inline comment or in its line
of the summary. The markers are read back from the pull request's comments
and reviews through the API on the next push, so a finding is posted once
however often the pull request is reviewed, with no state kept on the runner.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from clover_code.review.diff import commentable_lines
from clover_code.review.findings import SEVERITIES, Finding

__all__ = [
    "PlannedReview",
    "Posted",
    "marker",
    "plan_review",
    "posted_findings",
    "pull_diff",
]

_MARKER = re.compile(r"<!-- clover-review:(?P<fp>[0-9a-f]{16}) -->")
_TITLE = re.compile(r"^\*\*(?P<severity>bug|risk|nit): (?P<title>.+?)\*\*\s*$")
_LISTED = re.compile(
    r"^- \*\*(?P<severity>bug|risk|nit)\*\* `(?P<file>.+?):(?P<line>\d+)(?:-\d+)?`: "
    r"(?P<title>.+?) <!-- clover-review:[0-9a-f]{16} -->$",
    re.MULTILINE,
)


def marker(finding: Finding) -> str:
    """The hidden marker a posted finding carries."""
    return f"<!-- clover-review:{finding.fingerprint()} -->"


def pull_diff(files: Iterable[dict[str, Any]]) -> str:
    """A unified diff of a pull request from its ``/files`` entries (GitHub gives each
    file's hunks as ``patch``; a binary or very large file has none)."""
    parts: list[str] = []
    for entry in files:
        new = str(entry.get("filename") or "")
        if not new:
            continue
        old = str(entry.get("previous_filename") or new)
        status = entry.get("status")
        before = "/dev/null" if status == "added" else f"a/{old}"
        after = "/dev/null" if status == "removed" else f"b/{new}"
        patch = entry.get("patch")
        if not isinstance(patch, str) or not patch:
            parts.append(f"# {new}: {status or 'changed'}, no diff shown (binary or too large)\n")
            continue
        head = f"diff --git a/{old} b/{new}\n--- {before}\n+++ {after}\n"
        parts.append(head + patch + ("" if patch.endswith("\n") else "\n"))
    return "".join(parts)


@dataclass(slots=True)
class Posted:
    """The findings posted on the pull request before: their fingerprints, and what the
    model is told of them."""

    fingerprints: set[str] = field(default_factory=set)
    findings: list[Finding] = field(default_factory=list)


def _finding(severity: str, file: str, line: int, title: str) -> Finding | None:
    try:
        return Finding.model_validate(
            {"file": file, "line": max(1, line), "severity": severity, "title": title}
        )
    except ValueError:
        return None


def posted_findings(comments: list[dict[str, Any]], reviews: list[dict[str, Any]]) -> Posted:
    """What the earlier reviews posted, read from their markers."""
    posted = Posted()
    for comment in comments:
        body = str(comment.get("body") or "")
        found = _MARKER.search(body)
        if found is None:
            continue
        posted.fingerprints.add(found["fp"])
        title = _TITLE.match(body.splitlines()[0]) if body else None
        line = comment.get("line") or comment.get("original_line") or 1
        if title is not None and isinstance(line, int):
            known = _finding(title["severity"], str(comment.get("path")), line, title["title"])
            posted.findings += [known] if known is not None else []
    for review in reviews:
        body = str(review.get("body") or "")
        posted.fingerprints.update(m["fp"] for m in _MARKER.finditer(body))
        for listed in _LISTED.finditer(body):
            known = _finding(
                listed["severity"], listed["file"], int(listed["line"]), listed["title"]
            )
            posted.findings += [known] if known is not None else []
    return posted


@dataclass(frozen=True, slots=True)
class PlannedReview:
    """The review to post."""

    body: str
    comments: list[dict[str, Any]]
    inline: list[Finding]
    listed: list[Finding]
    """New findings named in the summary only (off the diff's lines, or past the cap)."""


def _placement(finding: Finding, hunks: list[range]) -> dict[str, Any] | None:
    """Where on the diff an inline comment on ``finding`` goes (None: off the diff)."""
    for hunk in hunks:
        last = finding.last_line if finding.last_line in hunk else None
        first = finding.line if finding.line in hunk else None
        if last is not None and first is not None and first < last:
            return {"line": last, "side": "RIGHT", "start_line": first, "start_side": "RIGHT"}
        if last is not None or first is not None:
            return {"line": last or first, "side": "RIGHT"}
    return None


def _comment_body(finding: Finding) -> str:
    body = finding.body.strip()
    text = f"**{finding.severity}: {finding.title}**"
    return f"{text}\n\n{body}\n\n{marker(finding)}" if body else f"{text}\n\n{marker(finding)}"


def _listed_line(finding: Finding) -> str:
    return f"- **{finding.severity}** `{finding.where}`: {finding.title} {marker(finding)}"


def _count(findings: list[Finding]) -> str:
    """ "1 bug, 2 nits": how many of each severity."""
    counts = [(sum(1 for f in findings if f.severity == s), s) for s in SEVERITIES]
    return ", ".join(f"{n} {s}{'s' if n != 1 else ''}" for n, s in counts if n)


def plan_review(
    findings: list[Finding],
    posted: Posted,
    diff: str,
    *,
    summary: str,
    head: str,
    limit: int,
    trigger: str,
    repeated: int = 0,
) -> PlannedReview:
    """The review of ``findings`` (bugs first): new ones inline where their lines are on
    the diff, at most ``limit`` of them; the rest named in the summary; none posted before.
    ``repeated``: findings found again that were left out already."""
    ranges = commentable_lines(diff)
    fresh: list[Finding] = []
    for finding in findings:
        fingerprint = finding.fingerprint()
        if fingerprint not in posted.fingerprints and fingerprint not in {
            f.fingerprint() for f in fresh
        }:
            fresh.append(finding)
    repeated += len(findings) - len(fresh)
    comments: list[dict[str, Any]] = []
    inline: list[Finding] = []
    off_diff: list[Finding] = []
    over: list[Finding] = []
    for finding in fresh:
        where = _placement(finding, ranges.get(finding.file, []))
        if where is None:
            off_diff.append(finding)
        elif len(comments) >= limit:
            over.append(finding)
        else:
            comments.append({"path": finding.file, "body": _comment_body(finding), **where})
            inline.append(finding)
    lines = [f"**{trigger} review** of {head[:12]}", "", summary.strip() or "(no summary)", ""]
    if fresh:
        lines.append(f"New findings: {_count(fresh)}.")
    else:
        lines.append("No new findings.")
    if repeated:
        lines.append(f"{repeated} found before {'is' if repeated == 1 else 'are'} not repeated.")
    if off_diff:
        lines += ["", "Not on a changed line:", *(_listed_line(f) for f in off_diff)]
    if over:
        lines += [
            "",
            f"Past the limit of {limit} inline comments (max_review_comments):",
            *(_listed_line(f) for f in over),
        ]
    return PlannedReview("\n".join(lines), comments, inline, off_diff + over)
