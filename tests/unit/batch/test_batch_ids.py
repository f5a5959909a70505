"""Batch task ids name folders that are made and written: every id that could reach
outside its own folder, or share one with another id, is refused with one sentence
naming its line; a workspace never replaces a folder it did not make."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from clover_code.batch.tasks import read_tasks
from clover_code.batch.workspace import WorkspaceError, prepare
from clover_code.errors import UsageError


def _tasks(tmp_path: Path, *ids: str) -> Path:
    path = tmp_path / "tasks.jsonl"
    rows = [{"id": i, "repo": ".", "task": "t"} for i in ids]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


@pytest.mark.parametrize(
    ("bad", "why"),
    [
        (".", "folder above"),
        ("..", "folder above"),
        ("a/b", "path separator"),
        ("../../etc", "path separator"),
        ("/abs", "path separator"),
        ("a\\b", "path separator"),
        ("", "is empty"),
        ("   ", "is empty"),
        ("a\x00b", "control character"),
        ("line\nbreak", "control character"),
        ("\x1b[31mred", "control character"),
        ("tab\there", "control character"),
    ],
)
def test_an_id_that_could_leave_its_folder_is_refused(tmp_path: Path, bad: str, why: str) -> None:
    path = _tasks(tmp_path, "fine", bad)
    with pytest.raises(UsageError) as caught:
        read_tasks(path)
    message = str(caught.value)
    assert f"{path} line 2 has the id" in message and why in message
    assert "\n" not in message


@pytest.mark.parametrize(
    ("first", "second"),
    [("a b", "a_b"), ("a:b", "a?b"), ("Task", "task"), ("x" * 130, "x" * 120 + "y")],
)
def test_ids_that_share_a_folder_after_slugging_are_refused(
    tmp_path: Path, first: str, second: str
) -> None:
    path = _tasks(tmp_path, first, "other", second)
    with pytest.raises(UsageError) as caught:
        read_tasks(path)
    message = str(caught.value)
    assert f"{path} line 3" in message and "line 1" in message
    assert "ids must differ" in message


def _repo(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "f.txt").write_text("x\n")
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "init"]):
        subprocess.run(
            ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=repo, check=True
        )
    return repo


def test_a_folder_left_by_an_earlier_run_is_never_deleted(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    workspaces = tmp_path / "out" / "workspaces"
    earlier = workspaces / "task"
    earlier.mkdir(parents=True)
    (earlier / "keep.txt").write_text("the user's\n")
    made = prepare(str(repo), None, workspaces, "task")
    assert made == workspaces / "task~2" and (made / "f.txt").read_text() == "x\n"
    assert (earlier / "keep.txt").read_text() == "the user's\n"
    again = prepare(str(repo), None, workspaces, "task")
    assert again == workspaces / "task~3" and (made / "f.txt").exists()


@pytest.mark.parametrize("slug", ["..", ".", "", "a/b"])
def test_a_workspace_never_names_a_folder_outside_its_own(tmp_path: Path, slug: str) -> None:
    out = tmp_path / "out"
    (out / "workspaces").mkdir(parents=True)
    (out / "mine.txt").write_text("keep\n")
    with pytest.raises(WorkspaceError):
        prepare(str(_repo(tmp_path)), None, out / "workspaces", slug)
    assert (out / "mine.txt").read_text() == "keep\n"
    assert [p.name for p in (out / "workspaces").iterdir()] == []


def test_a_failed_clone_leaves_nothing_behind(tmp_path: Path) -> None:
    workspaces = tmp_path / "workspaces"
    with pytest.raises(WorkspaceError, match="cannot clone"):
        prepare(str(tmp_path / "missing"), None, workspaces, "t")
    assert list(workspaces.iterdir()) == []
