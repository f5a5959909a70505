"""Snapshots: a review's findings in the transcript, and one finding opened at its lines.

The review's outcome is fixed (a stand-in reviewer returns a set report) so the
picture is the same on every run; ``test_review.py`` runs the real one.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from textual.pilot import Pilot
from textual.widgets import OptionList

from clover_code.review.diff import DiffTarget
from clover_code.review.findings import Finding
from clover_code.review.session import ReviewReport
from clover_code.ui.app import CloverApp
from clover_code.ui.bridge import Emit, SessionLike
from clover_code.ui.widgets.findings import FindingScreen, FindingsList
from tests.ui import scenes
from tests.ui.fakes_ui import ReplaySession
from tests.ui.test_flows import until
from tests.ui.test_snapshots import drawn, settle

SnapCompare = Callable[..., bool]

CALC = "def add(a, b):\n    return a + b\n\n\ndef mul(a, b):\n    return a + b\n"
FINDINGS = [
    Finding(
        file="calc.py",
        line=6,
        severity="bug",
        title="mul() adds instead of multiplying",
        body="`a + b` should be `a * b`; `mul(2, 3)` returns 5.",
    ),
    Finding(file="calc.py", line=5, severity="risk", title="mul() has no test in check.py"),
    Finding(file="calc.py", line=1, end_line=2, severity="nit", title="add() has no docstring"),
]


def reviewed_app(root: Path) -> CloverApp:
    """An app whose session replays the opening and whose reviewer returns a set report."""
    (root / "calc.py").write_text(CALC)

    async def factory(emit: Emit, resume: Path | None) -> SessionLike:
        return ReplaySession(emit, scenes.OPEN, [])

    async def fixed_reviewer(target: DiffTarget, emit: Emit) -> ReviewReport:
        summary = "Adds mul() next to add(); mul() adds instead of multiplying."
        what = "the changes since main (merge base 1a2b3c4d5e6f)"
        return ReviewReport(what, root, FINDINGS, summary)

    return CloverApp(
        factory,
        cwd=Path("/work/demo"),
        sessions_dir=None,
        git_status=False,
        reviewer=fixed_reviewer,
    )


async def review(pilot: Pilot[Any]) -> None:
    await settle(pilot)
    app = pilot.app
    assert isinstance(app, CloverApp)
    app.composer.input.insert("/review")
    await pilot.press("enter")
    await until(pilot, lambda: bool(app.query(FindingsList)), message="the findings")
    await drawn(pilot, "the review")


async def review_and_open(pilot: Pilot[Any]) -> None:
    await review(pilot)
    app = pilot.app
    app.query_one(FindingsList).query_one(OptionList).focus()
    await pilot.press("enter")
    await until(pilot, lambda: isinstance(app.screen, FindingScreen), message="the finding")
    await pilot.pause()
    await pilot.wait_for_scheduled_animations()


def test_review_findings_list(snap_compare: SnapCompare, tmp_path: Path) -> None:
    assert snap_compare(reviewed_app(tmp_path), terminal_size=(100, 30), run_before=review)


def test_review_finding_opened(snap_compare: SnapCompare, tmp_path: Path) -> None:
    app = reviewed_app(tmp_path)
    assert snap_compare(app, terminal_size=(100, 30), run_before=review_and_open)
