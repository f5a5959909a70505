"""Undo of the last turn that changed files, large files left out of checkpoints (and
said so), and the question before snapshotting a huge workspace. Real git, real files."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from clover_code import protocol as p
from clover_code.agent.checkpoints import shadow_store, workspace_check
from clover_code.agent.checkpoints.store import CheckpointStore
from clover_code.agent.checkpoints.workspace_check import snapshot_warning
from clover_code.agent.open import SessionOptions, open_session
from clover_code.agent.permissions.approval import RefuseApprover
from clover_code.config.settings import Settings
from tests.fakes import ScriptedBackend

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


@pytest.fixture
def store(repo: Path, tmp_path: Path) -> CheckpointStore:
    return CheckpointStore(repo, tmp_path / "data", session_id="s1")


def test_the_last_turn_that_changed_files_is_found_past_quiet_turns(
    repo: Path, store: CheckpointStore
) -> None:
    assert store.turns_to_last_change() == (0, 0)
    store.snapshot(1)
    (repo / "app.py").write_text("changed\n")
    store.end_turn(1)
    for turn in (2, 3):  # two turns that only talk
        store.snapshot(turn)
        store.end_turn(turn)
    assert store.turns_to_last_change() == (3, 1)
    assert store.undo(3) == ["app.py"]
    assert "return a - b" in (repo / "app.py").read_text()
    assert store.turns_to_last_change() == (0, 0)


def test_files_over_the_limit_are_skipped_and_said_once(
    repo: Path, store: CheckpointStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(shadow_store, "MAX_FILE_BYTES", 2 * 2**20)
    (repo / "big.bin").write_bytes(b"x" * (3 * 2**20))
    store.snapshot(1)
    notices = store.take_notices()
    assert len(notices) == 1 and "big.bin is 3 MiB, over the 2 MiB checkpoint limit" in notices[0]
    store.end_turn(1)
    store.snapshot(2)
    assert store.take_notices() == []


def test_home_and_crowded_folders_need_a_yes(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    assert "your home directory" in (snapshot_warning(home, home=home) or "")
    crowded = tmp_path / "crowded"
    (crowded / "data").mkdir(parents=True)
    for i in range(12):
        (crowded / "data" / f"{i}.txt").write_text("x")
    assert "more than 10 files outside git" in (
        snapshot_warning(crowded, home=home, limit=10) or ""
    )
    assert snapshot_warning(crowded, home=home, limit=100) is None
    # in a git repository, ignored files do not count
    subprocess.run(["git", "init", "-q"], cwd=crowded, check=True)
    (crowded / ".gitignore").write_text("data/\n")
    assert snapshot_warning(crowded, home=home, limit=10) is None


async def test_a_front_end_that_cannot_ask_snapshots_anyway_and_says_so(
    repo: Path, make_settings: Callable[..., Settings], monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = make_settings()
    monkeypatch.setattr(workspace_check, "LOOSE_FILES_LIMIT", 2)
    for i in range(4):
        (repo / f"loose{i}.txt").write_text("x")
    events: list[p.Event] = []
    session = await open_session(
        settings,
        repo,
        SessionOptions(emit=events.append, approver=RefuseApprover(), backend=ScriptedBackend([])),
    )
    try:
        started = next(e for e in events if isinstance(e, p.SessionStarted))
        assert started.checkpoint_warning is None and session.checkpoints_held is None
        notes = [e.text for e in events if isinstance(e, p.Notice)]
        assert any("more than 2 files outside git" in n and "anyway" in n for n in notes)
    finally:
        await session.close()
