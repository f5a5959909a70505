"""The app asks at start whether to trust the project's safety-loosening settings."""

from __future__ import annotations

from pathlib import Path

import pytest

from clover_code import protocol as p
from clover_code.agent.open import SessionOptions, open_session
from clover_code.config.load import load_settings
from clover_code.config.settings import Settings, trust_store
from clover_code.ui.app import CloverApp
from clover_code.ui.bridge import Emit, SessionLike
from clover_code.ui.run import trust_question
from clover_code.ui.widgets.notice_line import NoticeLine
from clover_code.ui.widgets.trust import TrustScreen
from tests.fakes import ScriptedBackend
from tests.ui.test_flows import SIZE, until

LOOSE = 'approval = "auto-edit"\n[permissions.allow]\nshell = ["pytest *"]\n'


def app_for(repo: Path, tmp_path: Path) -> CloverApp:
    """The app as ``run_app`` builds it, with a scripted model instead of a server."""

    def load() -> Settings:
        values = {"sessions_dir": tmp_path / "sessions", "sandbox": "none"}
        return load_settings(values, repo_root=repo, user_config=tmp_path / "none.toml", env={})

    question, current = trust_question(load(), load)

    async def factory(emit: Emit, resume: Path | None) -> SessionLike:
        settings = current()
        return await open_session(
            settings,
            repo,
            SessionOptions(
                emit=emit,
                approval_mode=settings.approval or "ask",
                resume=resume,
                backend=ScriptedBackend([]),
            ),
        )

    return CloverApp(factory, cwd=repo, sessions_dir=tmp_path / "sessions", trust=question)


@pytest.fixture
def loose_repo(repo: Path) -> Path:
    (repo / ".clover").mkdir()
    (repo / ".clover" / "config.toml").write_text(LOOSE)
    return repo


def started(app: CloverApp) -> p.SessionStarted:
    assert app.started is not None
    return app.started


async def test_trusting_applies_the_project_settings(loose_repo: Path, tmp_path: Path) -> None:
    app = app_for(loose_repo, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: isinstance(app.screen, TrustScreen))
        screen = app.screen
        assert isinstance(screen, TrustScreen)
        [(path, keys)] = screen.files
        assert path == str(loose_repo / ".clover" / "config.toml")
        assert keys == ['approval = "auto-edit"', "permissions.allow"]
        assert app.started is None  # nothing opens before the answer
        await pilot.press("t")
        await until(pilot, lambda: app.started is not None)
        assert started(app).approval == "auto-edit"
        assert not any("not trusted" in n.text for n in app.query(NoticeLine))
    store = trust_store()
    assert store.path.is_file()
    # remembered: the next start does not ask
    question, _ = trust_question(
        load_settings(repo_root=loose_repo, user_config=tmp_path / "none.toml", env={}), None
    )
    assert question is None


async def test_not_now_keeps_the_safe_settings(loose_repo: Path, tmp_path: Path) -> None:
    app = app_for(loose_repo, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: isinstance(app.screen, TrustScreen))
        await pilot.press("n")
        await until(pilot, lambda: app.started is not None)
        assert started(app).approval == "ask"
        await until(pilot, lambda: any("not trusted" in n.text for n in app.query(NoticeLine)))
    assert not trust_store().path.exists()


async def test_no_question_without_loosening_settings(repo: Path, tmp_path: Path) -> None:
    (repo / ".clover").mkdir()
    (repo / ".clover" / "config.toml").write_text('approval = "read-only"\n')
    app = app_for(repo, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.started is not None)
        assert started(app).approval == "read-only"
        assert not isinstance(app.screen, TrustScreen)
