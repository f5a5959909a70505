"""``/review`` in the app: a real read-only review session with a scripted model beside
the real conversation, its findings listed, one opened at its lines."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from textual.widgets import OptionList

from clover_code.config.settings import Settings
from clover_code.review.diff import DiffTarget
from clover_code.review.session import ReviewReport, run_review
from clover_code.ui.bridge import Emit
from clover_code.ui.widgets.findings import FindingScreen, FindingsList
from clover_code.ui.widgets.notice_line import NoticeLine
from tests.fakes import ScriptedBackend, text_response, tool_response
from tests.ui.fakes_ui import scripted_app
from tests.ui.test_flows import SIZE, type_and_send, until

MUL_BUG = {
    "file": "calc.py",
    "line": 6,
    "severity": "bug",
    "title": "mul() adds instead of multiplying",
    "body": "`a + b` should be `a * b`.",
}
ADD_NIT = {
    "file": "calc.py",
    "line": 1,
    "end_line": 2,
    "severity": "nit",
    "title": "add() has no docstring",
    "body": "",
}


def feature_branch(repo: Path) -> None:
    """A branch whose one commit adds mul() with a planted bug."""
    subprocess.run(["git", "checkout", "-q", "-b", "feature"], cwd=repo, check=True)
    with (repo / "calc.py").open("a") as f:
        f.write("\n\ndef mul(a, b):\n    return a + b\n")
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qam", "mul"],
        cwd=repo,
        check=True,
    )


async def test_review_lists_the_findings_and_opens_one_at_its_line(
    repo: Path, settings: Settings
) -> None:
    feature_branch(repo)
    answer = json.dumps({"summary": "Adds mul(); it adds.", "findings": [ADD_NIT, MUL_BUG]})
    reviewing = ScriptedBackend(
        [
            tool_response(("read_file", {"path": "calc.py"})),
            tool_response(
                ("edit_file", {"path": "calc.py", "old_string": "a + b", "new_string": "a * b"})
            ),
            text_response(answer),
        ]
    )
    targets: list[DiffTarget] = []

    async def reviewer(target: DiffTarget, emit: Emit) -> ReviewReport:
        targets.append(target)
        return await run_review(settings, repo, target, emit=emit, backend=reviewing)

    app = scripted_app(ScriptedBackend([]), repo, settings, reviewer=reviewer)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.started is not None)
        await type_and_send(pilot, "/review main")
        # The list is mounted, with its options, once its children are: wait for those.
        await until(
            pilot,
            lambda: (
                bool(app.query(FindingsList))
                and bool(app.query_one(FindingsList).query(OptionList))
            ),
            message="the findings",
        )
        listed = app.query_one(FindingsList)
        assert targets == [DiffTarget(base="main")]
        assert listed.title.startswith("Review of the changes since main (merge base ")
        assert listed.title.endswith(": 2 findings (Enter opens one at its lines)")
        # Bugs first, whatever order the model gave.
        assert [f.title for f in listed.findings] == [MUL_BUG["title"], ADD_NIT["title"]]
        options = listed.query_one(OptionList)
        assert options.option_count == 2
        assert "bug   calc.py:6  mul() adds instead of multiplying" in str(
            options.get_option_at_index(0).prompt
        )
        options.focus()
        await pilot.press("enter")
        await until(pilot, lambda: isinstance(app.screen, FindingScreen), message="the finding")
        shown = str(app.screen.query_one("#excerpt").render())
        assert "▶ 6 │     return a + b" in shown and "  5 │ def mul(a, b):" in shown
        await pilot.press("escape")
        await until(pilot, lambda: not isinstance(app.screen, FindingScreen))
        # The review never edited, and the conversation's own mode is untouched.
        assert "return a + b" in (repo / "calc.py").read_text()
        refusal = [m for m in reviewing.requests[-1].messages if m["role"] == "tool"][-1]
        assert "approval mode 'read-only' does not allow edit tools" in str(refusal["content"])
        assert app.status_bar.approval == "ask"
        assert "diff --git a/calc.py b/calc.py" in str(reviewing.requests[0].messages[-1])


async def test_a_bad_base_is_one_line(repo: Path, settings: Settings) -> None:
    async def reviewer(target: DiffTarget, emit: Emit) -> ReviewReport:
        return await run_review(settings, repo, target, emit=emit, backend=ScriptedBackend([]))

    app = scripted_app(ScriptedBackend([]), repo, settings, reviewer=reviewer)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.started is not None)
        await type_and_send(pilot, "/review nowhere")
        expected = "The review could not start: nowhere is not a branch, tag or commit"
        await until(
            pilot,
            lambda: any(expected in str(n.render()) for n in app.query(NoticeLine)),
            message="the refusal",
        )
        assert not app.query(FindingsList)
