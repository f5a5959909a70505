"""A trusted hook's script changed mid-session: the app asks again with the diff."""

from __future__ import annotations

from pathlib import Path

from clover_code.config.load import load_settings
from clover_code.config.settings import Settings, trust_store
from clover_code.ui.app import CloverApp
from clover_code.ui.widgets.approval import ApprovalScreen
from clover_code.ui.widgets.diff_view import DiffView
from tests.fakes import ScriptedBackend, text_response, tool_response
from tests.ui.fakes_ui import scripted_app
from tests.ui.test_flows import SIZE, type_and_send, until

HOOK = '[[hooks.PreToolUse]]\nmatcher = "shell"\ncommand = "sh .clover/hooks/check.sh"\n'
REWRITE = "printf 'echo v2 >> ran.txt\\n' > .clover/hooks/check.sh"


def _trusted_repo(repo: Path, tmp_path: Path) -> Settings:
    """A project whose hook (and its script) the user trusted; its settings as loaded."""
    (repo / ".clover" / "hooks").mkdir(parents=True)
    (repo / ".clover" / "config.toml").write_text(HOOK)
    (repo / ".clover" / "hooks" / "check.sh").write_text("echo v1 >> ran.txt\n")
    values = {"sessions_dir": tmp_path / "sessions", "sandbox": "none"}
    first = load_settings(values, repo_root=repo, user_config=tmp_path / "none.toml", env={})
    assert first.project_trust is not None
    trust_store().trust(repo, first.project_trust.untrusted())
    return load_settings(values, repo_root=repo, user_config=tmp_path / "none.toml", env={})


def _app(repo: Path, settings: Settings) -> CloverApp:
    backend = ScriptedBackend(
        [
            tool_response(("shell", {"command": REWRITE})),
            tool_response(("shell", {"command": "true"})),
            text_response("Done."),
        ]
    )
    return scripted_app(backend, repo, settings, approval="full-auto")


def _trusted_now(repo: Path, tmp_path: Path) -> bool:
    values = {"sessions_dir": tmp_path / "sessions", "sandbox": "none"}
    again = load_settings(values, repo_root=repo, user_config=tmp_path / "none.toml", env={})
    assert again.project_trust is not None
    return not again.project_trust.untrusted()


async def test_trusting_the_changed_script_runs_it_and_records_trust(
    repo: Path, tmp_path: Path
) -> None:
    app = _app(repo, _trusted_repo(repo, tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.started is not None)
        await type_and_send(pilot, "go")
        await until(pilot, lambda: isinstance(app.screen, ApprovalScreen))
        screen = app.screen
        assert isinstance(screen, ApprovalScreen)
        shown = screen.query_one(DiffView).diff
        assert "-echo v1 >> ran.txt\n" in shown and "+echo v2 >> ran.txt\n" in shown
        assert ".clover/hooks/check.sh" in screen.request.summary
        await pilot.press("y")
        await until(pilot, lambda: not app.turn_running)
    assert (repo / "ran.txt").read_text() == "v1\nv2\n"
    assert _trusted_now(repo, tmp_path)


async def test_refusing_the_changed_script_does_not_run_it(repo: Path, tmp_path: Path) -> None:
    app = _app(repo, _trusted_repo(repo, tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.started is not None)
        await type_and_send(pilot, "go")
        await until(pilot, lambda: isinstance(app.screen, ApprovalScreen))
        await pilot.press("n")
        await until(pilot, lambda: not app.turn_running)
    assert (repo / "ran.txt").read_text() == "v1\n"
    assert not _trusted_now(repo, tmp_path)
