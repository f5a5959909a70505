"""The pull-request reviewer's pieces: the event, the diff from the API's files, the
markers read back, and where each finding goes in the review."""

from __future__ import annotations

import json
from pathlib import Path

from clover_code.github.event import read_event
from clover_code.github.review_post import marker, plan_review, posted_findings, pull_diff
from clover_code.review.diff import commentable_lines
from clover_code.review.findings import Finding
from tests.paths import GITHUB_EVENTS

EVENTS = GITHUB_EVENTS

FILES = [
    {
        "filename": "calc.py",
        "status": "modified",
        "patch": "@@ -1,2 +1,6 @@\n a\n b\n+c\n+d\n+e\n+f",
    },
    {
        "filename": "new.py",
        "previous_filename": "old.py",
        "status": "renamed",
        "patch": "@@ -5 +5 @@\n-x\n+y",
    },
    {"filename": "logo.png", "status": "added"},
    {"filename": "gone.py", "status": "removed", "patch": "@@ -1 +0,0 @@\n-z"},
]


def finding(line: int, title: str, *, end: int | None = None, file: str = "calc.py") -> Finding:
    return Finding(file=file, line=line, end_line=end, severity="bug", title=title, body="Why.")


def test_pull_request_events_and_review_comments(tmp_path: Path) -> None:
    opened = read_event(EVENTS / "pull_request_opened.json", "pull_request_target")
    assert opened is not None and opened.kind == "pull_request" and opened.number == 7
    assert opened.author == "maintainer-mia" and opened.asks_review("@clover")
    payload = json.loads((EVENTS / "pull_request_opened.json").read_text())
    for action, acted in (("synchronize", True), ("closed", False), ("edited", False)):
        path = tmp_path / f"{action}.json"
        path.write_text(json.dumps({**payload, "action": action}))
        assert (read_event(path, None) is not None) is acted
    comment = read_event(EVENTS / "issue_comment_review.json", "issue_comment")
    assert comment is not None and comment.asks_review("@clover")
    plain = read_event(EVENTS / "issue_comment.json", "issue_comment")
    assert plain is not None and not plain.asks_review("@clover")  # an issue, and no "review"


def test_the_diff_from_the_files_and_its_commentable_lines() -> None:
    diff = pull_diff(FILES)
    assert "--- a/old.py\n+++ b/new.py\n@@ -5 +5 @@" in diff
    assert "# logo.png: added, no diff shown (binary or too large)" in diff
    assert "+++ /dev/null" in diff
    assert commentable_lines(diff) == {"calc.py": [range(1, 7)], "new.py": [range(5, 6)]}


def test_placement_the_limit_and_the_summary() -> None:
    diff = pull_diff(FILES)
    findings = [
        finding(3, "Range in a hunk", end=5),
        finding(6, "Last line", end=9),  # only its first line is on the diff
        finding(40, "Far away"),
        finding(2, "Another in range"),
        finding(5, "Past the limit", file="new.py"),
    ]
    plan = plan_review(
        findings,
        posted_findings([], []),
        diff,
        summary="Sum.",
        head="a" * 40,
        limit=3,
        trigger="@clover",
    )
    where = [(c["path"], c.get("start_line"), c["line"]) for c in plan.comments]
    assert where == [("calc.py", 3, 5), ("calc.py", None, 6), ("calc.py", None, 2)]
    assert [f.title for f in plan.listed] == ["Far away", "Past the limit"]
    assert plan.body.startswith(
        "**@clover review** of aaaaaaaaaaaa\n\nSum.\n\nNew findings: 5 bugs."
    )
    assert "Not on a changed line:\n- **bug** `calc.py:40`: Far away" in plan.body
    assert "Past the limit of 3 inline comments (max_review_comments):\n- **bug** `new.py:5`" in (
        plan.body
    )
    assert all(
        marker(f) in plan.body or any(marker(f) in c["body"] for c in plan.comments)
        for f in findings
    )


def test_markers_read_back_stop_repeats_and_name_what_was_said() -> None:
    diff = pull_diff(FILES)
    first = plan_review(
        [finding(3, "Range in a hunk"), finding(40, "Far away")],
        posted_findings([], []),
        diff,
        summary="",
        head="b" * 40,
        limit=20,
        trigger="@clover",
    )
    comments = [
        {"path": c["path"], "line": c["line"], "body": c["body"], "user": {"type": "Bot"}}
        for c in first.comments
    ]
    posted = posted_findings(comments, [{"body": first.body}])
    assert {(f.file, f.line, f.title) for f in posted.findings} == {
        ("calc.py", 3, "Range in a hunk"),
        ("calc.py", 40, "Far away"),
    }
    again = plan_review(
        [finding(4, "Range in a hunk"), finding(40, "far away!"), finding(2, "New one")],
        posted,
        diff,
        summary="",
        head="c" * 40,
        limit=20,
        trigger="@clover",
        repeated=1,
    )
    assert [c["line"] for c in again.comments] == [2]
    assert "New findings: 1 bug." in again.body and "3 found before are not repeated." in again.body
