"""The approval modal: the file's real diff, session-wide answers for edits and commands,
and what a failed command's card shows (real Session, scripted model)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from textual.widgets import Button, Input

from clover_code import protocol as p
from clover_code.agent.turn import dispatch
from clover_code.config.settings import Settings
from clover_code.ui.widgets.approval import ApprovalScreen, key_hints
from clover_code.ui.widgets.diff_view import DiffView, render_diff
from clover_code.ui.widgets.tool_card import ToolCard
from tests.fakes import ScriptedBackend, text_response, tool_response
from tests.ui.fakes_ui import scripted_app
from tests.ui.test_flows import SIZE, type_and_send, until


def _edit(old: str, new: str, path: str = "calc.py") -> tuple[str, dict[str, str]]:
    return ("edit_file", {"path": path, "old_string": old, "new_string": new})


async def test_edit_approval_shows_the_file_diff_and_a_allows_the_file(
    repo: Path, settings: Settings
) -> None:
    (repo / "calc.py").write_text(
        "".join(f"# line {i}\n" for i in range(1, 11)) + "def add(a, b):\n    return a - b\n"
    )
    backend = ScriptedBackend(
        [
            tool_response(_edit("return a - b", "return a + b")),
            tool_response(_edit("# line 1\n", "# first line\n")),
            tool_response(_edit("# first line\n", "# line one\n", "README.md")),
            text_response("Done."),
        ]
    )
    app = scripted_app(backend, repo, settings)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.started is not None)
        await type_and_send(pilot, "fix add")
        await until(pilot, lambda: isinstance(app.screen, ApprovalScreen))
        screen = app.screen
        assert isinstance(screen, ApprovalScreen)
        shown = screen.query_one(DiffView).diff
        # the file's diff, with its context lines and real line numbers
        assert "@@ -9,4 +9,4 @@" in shown and " # line 10\n" in shown
        plain = render_diff(shown, 300).plain
        assert "  12 -    return a - b" in plain and "  12 +    return a + b" in plain
        assert "this file" in str(key_hints(screen.request))
        await pilot.press("a")  # edits to calc.py are allowed for the session
        # the second edit of calc.py runs without asking; README.md asks again
        await until(pilot, lambda: isinstance(app.screen, ApprovalScreen))
        assert isinstance(app.screen, ApprovalScreen)
        assert app.screen.request.arguments["path"] == "README.md"
        await pilot.press("n")
        await until(pilot, lambda: not app.turn_running)
        cards = list(app.query(ToolCard))
        assert [c.status for c in cards] == ["ok", "ok", "denied"]
        # the card shows the same diff the modal showed
        assert cards[0].query_one(DiffView).diff == shown
        decisions = [op.decision for op in app.bridge.sent if isinstance(op, p.ApprovalDecision)]
        assert decisions == ["allow_file", "deny"]


async def test_shift_a_allows_every_edit_for_the_session(repo: Path, settings: Settings) -> None:
    backend = ScriptedBackend(
        [
            tool_response(_edit("return a - b", "return a + b")),
            tool_response(_edit("# calc", "# Calc", "README.md")),
            text_response("Done."),
        ]
    )
    app = scripted_app(backend, repo, settings)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.started is not None)
        await type_and_send(pilot, "fix")
        await until(pilot, lambda: isinstance(app.screen, ApprovalScreen))
        await pilot.press("A")
        await until(pilot, lambda: not app.turn_running)
        assert (repo / "README.md").read_text() == "# Calc\n"
        assert [c.status for c in app.query(ToolCard)] == ["ok", "ok"]


async def test_a_command_without_a_safe_prefix_says_none_is_offered(
    repo: Path, settings: Settings
) -> None:
    backend = ScriptedBackend(
        [tool_response(("shell", {"command": "python3 -c 'print(1)'"})), text_response("ok")]
    )
    app = scripted_app(backend, repo, settings)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.started is not None)
        await type_and_send(pilot, "run")
        await until(pilot, lambda: isinstance(app.screen, ApprovalScreen))
        screen = app.screen
        assert isinstance(screen, ApprovalScreen) and screen.request.prefix is None
        assert "no session rule for this command" in str(key_hints(screen.request))
        await pilot.press("a")  # not offered: nothing happens
        assert app.screen is screen
        await pilot.press("y")
        await until(pilot, lambda: not app.turn_running)


class _StepClock:
    """Stands in for ``time`` in the dispatcher: real time plus what the test adds."""

    def __init__(self) -> None:
        self.extra = 0.0

    def monotonic(self) -> float:
        return time.monotonic() + self.extra


async def test_a_failed_command_shows_failure_and_its_duration_excludes_the_wait(
    repo: Path, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = _StepClock()
    monkeypatch.setattr(dispatch, "time", clock)
    backend = ScriptedBackend(
        [tool_response(("shell", {"command": "false"})), text_response("It failed.")]
    )
    app = scripted_app(backend, repo, settings)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.started is not None)
        await type_and_send(pilot, "run false")
        await until(pilot, lambda: isinstance(app.screen, ApprovalScreen))
        clock.extra = 600.0  # the user thinks for ten minutes
        await pilot.press("y")
        await until(pilot, lambda: not app.turn_running)
        card = app.query_one(ToolCard)
        assert card.finished is not None and card.finished.display.exit_code == 1
        title = str(card._title.content)
        assert title.startswith("✗") and "exit 1" in title
        assert card.finished.duration < 300, "the wait for approval counted as run time"


async def test_buttons_and_hints_stay_on_an_80x24_screen_with_a_long_diff() -> None:
    from tests.ui import scenes
    from tests.ui.fakes_ui import replay_app

    app = replay_app(scenes.OPEN, [scenes.edit_approval()])
    async with app.run_test(size=(80, 24)) as pilot:
        await until(pilot, lambda: app.started is not None)
        await type_and_send(pilot, "make it fast")
        await until(pilot, lambda: isinstance(app.screen, ApprovalScreen))
        await pilot.pause(0.2)
        screen = app.screen
        shown = screen.region
        for widget in [*screen.query("Button"), screen.query_one("#hints")]:
            assert shown.contains_region(widget.region), f"{widget} is cut off"
        body = screen.query_one("#body")
        assert body.max_scroll_y > 0  # the diff scrolls inside the modal
        await pilot.press("n")
        assert app.screen is not screen


def test_a_patch_offers_all_edits_but_not_this_file() -> None:
    patch = p.ApprovalRequested(
        request_id="r",
        call_id="c",
        name="apply_patch",
        kind="edit",
        summary="2 files",
        arguments={"patch": "*** Begin Patch\n*** End Patch\n"},
    )
    hints = str(key_hints(patch))
    assert "this file" not in hints and "A all edits this session" in hints


async def test_typed_feedback_reaches_its_field_after_tab_moved_focus(
    repo: Path, settings: Settings
) -> None:
    backend = ScriptedBackend(
        [tool_response(("shell", {"command": "rm -rf build"})), text_response("ok")]
    )
    app = scripted_app(backend, repo, settings)
    async with app.run_test(size=(80, 24)) as pilot:
        await until(pilot, lambda: app.started is not None)
        await type_and_send(pilot, "clean")
        await until(pilot, lambda: isinstance(app.screen, ApprovalScreen))
        screen = app.screen
        assert isinstance(screen, ApprovalScreen)
        field = screen.query_one("#fb", Input)
        assert "type any other key" in str(field.placeholder)
        await pilot.press("tab")
        assert isinstance(screen.focused, Button)
        await pilot.press(*"wrong, keep it")  # its "n" and "y" do not answer
        assert app.screen is screen and field.value == "wrong, keep it"
        await pilot.press("tab", "y")  # focus left the field: still the feedback's key
        assert app.screen is screen and field.value == "wrong, keep ity"
        await pilot.press("enter")
        await until(pilot, lambda: not app.turn_running)
        decisions = [op for op in app.bridge.sent if isinstance(op, p.ApprovalDecision)]
        assert [(d.decision, d.feedback) for d in decisions] == [("deny", "wrong, keep ity")]


async def test_a_on_python_m_pytest_allows_that_module_for_the_session(
    repo: Path, settings: Settings
) -> None:
    backend = ScriptedBackend(
        [
            tool_response(("shell", {"command": "python3 -m pytest -q"})),
            tool_response(("shell", {"command": "python3 -m pytest -q calc.py"})),
            tool_response(("shell", {"command": "python3 -c 'print(1)'"})),
            text_response("ok"),
        ]
    )
    app = scripted_app(backend, repo, settings)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.started is not None)
        await type_and_send(pilot, "test")
        await until(pilot, lambda: isinstance(app.screen, ApprovalScreen))
        screen = app.screen
        assert isinstance(screen, ApprovalScreen)
        assert screen.request.prefix == "python3 -m pytest"
        assert "`python3 -m pytest` this session" in str(key_hints(screen.request))
        await pilot.press("a")
        # the second pytest runs without asking; python3 -c asks
        await until(
            pilot, lambda: isinstance(app.screen, ApprovalScreen) and app.screen is not screen
        )
        assert isinstance(app.screen, ApprovalScreen)
        assert app.screen.request.arguments["command"] == "python3 -c 'print(1)'"
        await pilot.press("n")
        await until(pilot, lambda: not app.turn_running)
        decisions = [op.decision for op in app.bridge.sent if isinstance(op, p.ApprovalDecision)]
        assert decisions == ["allow_prefix", "deny"]
