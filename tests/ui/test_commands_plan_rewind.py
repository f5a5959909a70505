"""The app's custom commands and /skills, plan mode's question, /fork, and the three
choices of /rewind (real Session, scripted model, real command and skill files)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from clover_code import protocol as p
from clover_code.config.settings import Settings
from clover_code.ui.widgets.choice import ChoiceScreen
from clover_code.ui.widgets.notice_line import NoticeLine
from tests.fakes import ScriptedBackend, text_response, tool_response
from tests.ui.fakes_ui import scripted_app
from tests.ui.test_flows import SIZE, answers, type_and_send, until

REVIEW = """\
---
description: Review a file for bugs
argument-hint: FILE
---
Review $ARGUMENTS for bugs and say what you find.
"""
SKILL = """\
---
name: tidy-imports
description: Sort and group Python imports the house way
---
Group stdlib, third party, then local imports.
"""


def notes(app: object) -> str:
    return "\n".join(str(n.text) for n in app.query(NoticeLine))  # type: ignore[attr-defined]


def user_texts(backend: ScriptedBackend) -> list[str]:
    messages = backend.requests[-1].messages
    return [str(m["content"]) for m in messages if m["role"] == "user"]


def asking(app: object) -> bool:
    """A ChoiceScreen is up and drawn (its buttons are mounted)."""
    screen = app.screen  # type: ignore[attr-defined]
    return isinstance(screen, ChoiceScreen) and bool(screen.query("Button"))


def completion(app: object) -> list[str]:
    menu = app.composer.menu  # type: ignore[attr-defined]
    return [str(menu.get_option_at_index(i).prompt) for i in range(menu.option_count)]


async def test_custom_command_completes_with_its_description_and_runs(
    repo: Path, settings: Settings
) -> None:
    (repo / ".clover" / "commands").mkdir(parents=True)
    (repo / ".clover" / "commands" / "recheck.md").write_text(REVIEW)
    skill = repo / ".clover" / "skills" / "tidy-imports"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text(SKILL)
    backend = ScriptedBackend([text_response("Looks fine.")])
    app = scripted_app(backend, repo, settings)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.started is not None and app.composer.custom != [])
        app.composer.input.insert("/rec")
        await until(pilot, lambda: any("/recheck" in o for o in completion(app)))
        shown = next(o for o in completion(app) if "/recheck" in o)
        assert "FILE" in shown and "Review a file for bugs" in shown
        await pilot.press("tab")
        assert app.composer.input.text == "/recheck "
        app.composer.input.insert("calc.py")
        await pilot.press("enter")
        await until(pilot, lambda: "Looks fine." in answers(app) and not app.turn_running)
        assert user_texts(backend)[-1] == "Review calc.py for bugs and say what you find."
        assert "unknown command" not in notes(app)
        await type_and_send(pilot, "/skills")
        await until(pilot, lambda: "Skills" in notes(app))
        assert "tidy-imports (project," in notes(app)
        assert "Sort and group Python imports the house way" in notes(app)
        added = repo / ".clover" / "skills" / "write-changelog"
        added.mkdir()
        (added / "SKILL.md").write_text(
            "---\nname: write-changelog\ndescription: Add a changelog entry\n---\nBody.\n"
        )
        await type_and_send(pilot, "/skills")  # listed while the app runs, and marked
        await until(pilot, lambda: "write-changelog" in notes(app))
        assert "Add a changelog entry (added since this session started" in notes(app)
        assert "house way (added" not in notes(app)


async def test_plan_mode_asks_then_carries_out_in_the_chosen_mode(
    repo: Path, settings: Settings
) -> None:
    backend = ScriptedBackend(
        [
            tool_response(("write_file", {"path": "calc.py", "content": "x = 1\n"})),
            text_response("PLAN: make add return a + b."),
            text_response("Done."),
        ]
    )
    app = scripted_app(backend, repo, settings, approval="plan")
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.started is not None)
        assert app.status_bar.approval == "plan"
        await type_and_send(pilot, "fix add")
        await until(pilot, lambda: asking(app))
        assert isinstance(app.screen, ChoiceScreen)
        assert "PLAN: make add return a + b." in app.screen.details
        assert "return a - b" in (repo / "calc.py").read_text()  # the write was refused
        first = backend.requests[0]
        assert "Plan mode" in str(first.messages[0]["content"])
        assert "write_file" not in {t.name for t in first.tools}
        await pilot.press("e")
        await until(pilot, lambda: "Done." in answers(app) and not app.turn_running)
        assert app.status_bar.approval == "auto-edit"
        assert user_texts(backend)[-1] == "Carry out the plan."
        assert "write_file" in {t.name for t in backend.requests[-1].tools}
        assert p.SetApprovalMode(mode="auto-edit") in app.bridge.sent


async def test_plan_feedback_keeps_planning(repo: Path, settings: Settings) -> None:
    backend = ScriptedBackend([text_response("PLAN A."), text_response("PLAN B, with tests.")])
    app = scripted_app(backend, repo, settings, approval="plan")
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.started is not None)
        await type_and_send(pilot, "fix add")
        await until(pilot, lambda: asking(app))
        await pilot.click("#text")
        await pilot.press(*"add tests", "enter")
        await until(pilot, lambda: "PLAN B" in answers(app) and not app.turn_running)
        assert user_texts(backend)[-1] == "add tests"
        assert app.status_bar.approval == "plan"
        await until(pilot, lambda: asking(app))
        await pilot.press("escape")
        await until(pilot, lambda: "Still in plan mode" in notes(app))


async def test_fork_continues_in_a_copy_and_keeps_the_original(
    repo: Path, settings: Settings
) -> None:
    backend = ScriptedBackend([text_response("FORTY-TWO."), text_response("Still 42.")])
    app = scripted_app(backend, repo, settings)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.started is not None)
        await type_and_send(pilot, "the answer?")
        await until(pilot, lambda: "FORTY-TWO." in answers(app) and not app.turn_running)
        assert app.started is not None
        original_id, original = app.started.session_id, Path(app.started.transcript)
        await type_and_send(pilot, "/fork")
        await until(pilot, lambda: app.started is not None and app.started.resumed)
        # the original only got its own end (it was closed); the fork writes elsewhere
        saved = original.read_bytes()
        last = json.loads(saved.splitlines()[-1])["event"]
        assert (last["type"], last["session_id"]) == ("session_ended", original_id)
        assert app.started is not None and app.started.session_id != original_id
        assert f"Forked session {original_id}" in notes(app)
        await type_and_send(pilot, "/cost")  # the parent's response is not the fork's
        await until(pilot, lambda: "This session:" in notes(app))
        assert "This session: 0 model responses" in notes(app)
        await type_and_send(pilot, "sure?")
        await until(pilot, lambda: "Still 42." in answers(app) and not app.turn_running)
        assert user_texts(backend) == ["the answer?", "sure?"]
        assert original.read_bytes() == saved


async def test_rewind_files_after_the_conversation_says_it_is_gone(
    repo: Path, settings: Settings
) -> None:
    edit = {"path": "calc.py", "old_string": "return a - b", "new_string": "return a + b"}
    backend = ScriptedBackend([tool_response(("edit_file", edit)), text_response("Fixed.")])
    app = scripted_app(backend, repo, settings, approval="full-auto")
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.started is not None)
        await type_and_send(pilot, "fix add")
        await until(pilot, lambda: "Fixed." in answers(app) and not app.turn_running)
        await type_and_send(pilot, "/rewind 1 conversation")
        await until(pilot, lambda: "Cut the conversation" in notes(app))
        app.composer.input.clear()
        await type_and_send(pilot, "/rewind 1 files")
        await until(pilot, lambda: "Restored" in notes(app))
        assert "return a - b" in (repo / "calc.py").read_text()
        assert "the conversation no longer holds that turn" in notes(app)
        assert "still holds" not in notes(app)


@pytest.mark.parametrize(
    ("key", "restored", "cut"),
    [("f", True, False), ("c", False, True), ("b", True, True)],
    ids=["files", "conversation", "both"],
)
async def test_rewind_offers_files_conversation_or_both(
    repo: Path, settings: Settings, key: str, restored: bool, cut: bool
) -> None:
    edit = {"path": "calc.py", "old_string": "return a - b", "new_string": "return a + b"}
    backend = ScriptedBackend(
        [tool_response(("edit_file", edit)), text_response("Fixed."), text_response("Next.")]
    )
    app = scripted_app(backend, repo, settings, approval="full-auto")
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.started is not None)
        await type_and_send(pilot, "fix add")
        await until(pilot, lambda: "Fixed." in answers(app) and not app.turn_running)
        await type_and_send(pilot, "/rewind 1")
        await until(pilot, lambda: asking(app))
        assert isinstance(app.screen, ChoiceScreen)
        assert "calc.py" in app.screen.details
        await pilot.press(key)
        await until(pilot, lambda: any(isinstance(op, p.Undo) for op in app.bridge.sent))
        await until(
            pilot,
            lambda: "Restored" in notes(app) or "Cut the" in notes(app) or "Undid" in notes(app),
        )
        text = (repo / "calc.py").read_text()
        assert ("return a - b" in text) is restored
        assert (app.composer.input.text == "fix add") is cut
        app.composer.input.clear()
        await type_and_send(pilot, "go on")
        await until(pilot, lambda: "Next." in answers(app) and not app.turn_running)
        assert ("fix add" in user_texts(backend)) is not cut
