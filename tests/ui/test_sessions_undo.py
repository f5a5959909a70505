"""/undo of the last turn that changed files, the session picker, the question before
snapshotting a crowded folder, and the resume hint on quitting (real Session)."""

from __future__ import annotations

from pathlib import Path

import pytest

from clover_code import protocol as p
from clover_code.agent.checkpoints import workspace_check
from clover_code.agent.transcript import Transcript
from clover_code.config.settings import Settings
from clover_code.ui.run import resume_hint
from clover_code.ui.widgets.confirm import ConfirmScreen
from clover_code.ui.widgets.notice_line import NoticeLine
from clover_code.ui.widgets.session_picker import SessionPicker
from tests.fakes import ScriptedBackend, text_response, tool_response
from tests.ui.fakes_ui import scripted_app
from tests.ui.test_flows import SIZE, answers, type_and_send, until


def notes(app: object) -> str:
    return "\n".join(n.text for n in app.query(NoticeLine))  # type: ignore[attr-defined]


async def test_undo_reverts_the_last_turn_that_changed_files_and_says_which(
    repo: Path, settings: Settings
) -> None:
    edit = {"path": "calc.py", "old_string": "return a - b", "new_string": "return a + b"}
    backend = ScriptedBackend(
        [
            tool_response(("edit_file", edit)),
            text_response("Fixed."),
            text_response("Sure."),
            text_response("Fresh start."),
        ]
    )
    app = scripted_app(backend, repo, settings, approval="full-auto")
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.started is not None)
        await type_and_send(pilot, "fix add")
        await until(pilot, lambda: "Fixed." in answers(app))
        await until(pilot, lambda: not app.turn_running)
        await type_and_send(pilot, "thanks")  # a turn that changes nothing
        await until(pilot, lambda: "Sure." in answers(app) and not app.turn_running)
        await type_and_send(pilot, "/undo")
        await until(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        assert isinstance(app.screen, ConfirmScreen)
        assert "last turn that changed files (2 turns back)" in app.screen.question
        assert app.screen.details == [
            "  calc.py",
            "",
            "and removes these 2 turns from the conversation:",
            "  turn 1: fix add",
            "  turn 2: thanks",
        ]
        await pilot.press("y")
        await until(pilot, lambda: "Undid" in notes(app))
        assert (
            "Undid turn 1 and the 1 after it: restored calc.py, and removed those turns "
            "from the conversation." in notes(app)
        )
        assert "return a - b" in (repo / "calc.py").read_text()
        assert app.turn_files == []
        undo = app.bridge.sent[-1]
        assert isinstance(undo, p.Undo) and undo.last_change
        # the model no longer sees the undone turns
        await type_and_send(pilot, "start over")
        await until(pilot, lambda: "Fresh start." in answers(app))
        sent = str(backend.requests[-1].messages)
        assert "start over" in sent and "fix add" not in sent and "thanks" not in sent


async def test_undo_after_a_compaction_says_the_conversation_keeps_the_turns() -> None:
    from tests.ui import scenes
    from tests.ui.fakes_ui import replay_app

    app = replay_app(scenes.OPEN)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.started is not None)
        app.bridge.emit(p.UndoDone(turns=1, files=["calc.py"], turn=3, forgotten=False))
        await until(pilot, lambda: "Undid turn 3" in notes(app))
        assert "The conversation still holds that turn (it was compacted" in notes(app)


def _old_session(sessions: Path, session_id: str, cwd: Path, prompt: str) -> None:
    transcript = Transcript.create(sessions, {"id": session_id, "cwd": str(cwd), "model": "m"})
    transcript.message({"role": "user", "content": prompt})
    transcript.close()


async def test_sessions_lists_this_repository_and_resumes_the_pick(
    repo: Path, settings: Settings, tmp_path: Path
) -> None:
    sessions = settings.resolved_sessions_dir()
    _old_session(sessions, "20250101-090000-aaaaaa", repo.resolve(), "fix the parser")
    _old_session(sessions, "20250102-090000-bbbbbb", tmp_path / "elsewhere", "other project")
    app = scripted_app(ScriptedBackend([]), repo, settings)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.started is not None)
        await type_and_send(pilot, "/sessions")
        await until(pilot, lambda: isinstance(app.screen, SessionPicker))
        picker = app.screen
        assert isinstance(picker, SessionPicker)
        assert [s.first_prompt for s in picker.sessions] == ["fix the parser"]
        assert picker.sessions[0].when == "2025-01-01 09:00"
        await pilot.press("escape")
        await type_and_send(pilot, "/sessions --all")
        await until(pilot, lambda: isinstance(app.screen, SessionPicker))
        assert isinstance(app.screen, SessionPicker)
        assert [s.first_prompt for s in app.screen.sessions] == ["other project", "fix the parser"]
        await pilot.press("escape")
        await type_and_send(pilot, "/resume")  # no id: the same picker
        await until(pilot, lambda: isinstance(app.screen, SessionPicker))
        await pilot.press("enter")
        await until(pilot, lambda: app.started is not None and app.started.resumed)
        assert app.started is not None
        assert app.started.session_id == "20250101-090000-aaaaaa"
        assert "fix the parser" in [m.text for m in app.query("UserMessage")]  # type: ignore[attr-defined]


async def test_a_crowded_folder_asks_before_checkpoints_and_no_turns_them_off(
    repo: Path, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(workspace_check, "LOOSE_FILES_LIMIT", 3)
    for i in range(5):
        (repo / f"loose{i}.txt").write_text("x")
    app = scripted_app(ScriptedBackend([text_response("ok")]), repo, settings)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        assert isinstance(app.screen, ConfirmScreen)
        assert "more than 3 files outside git" in app.screen.details[0]
        await pilot.press("n")
        await until(pilot, lambda: "Checkpoints are off" in notes(app))
        assert p.AllowCheckpoints(allow=False) in app.bridge.sent


async def test_quitting_says_how_to_resume(repo: Path, settings: Settings) -> None:
    app = scripted_app(ScriptedBackend([]), repo, settings)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.started is not None)
        await type_and_send(pilot, "/quit")
        await until(pilot, lambda: app._quitting and app.bridge.session is None)
    assert app.started is not None
    assert resume_hint(app) == (
        f"Session saved. Resume it with: clover-code --resume {app.started.session_id}"
    )
