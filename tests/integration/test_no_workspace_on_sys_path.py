"""Processes clover-code starts with ``python -m`` never import the workspace's modules.

``python -m`` puts the current directory first on ``sys.path``; a repository
with a top-level ``pydantic.py`` or ``clover_code/`` (any SWE-bench repository
named like one of our dependencies, or a pull request that adds one) would
then run its own code on the host in place of ours. Every such process runs
with ``-P``: here a planted module that would leave a marker file is never
imported.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from clover_code.repomap.parse import PARALLEL_MIN_FILES, FileParser, parse_many
from tests.integration.sse_server import ScriptedServer
from tests.integration.test_batch import answer, lines, run_batch, write_tasks

pytestmark = pytest.mark.integration


def plant(folder: Path, marker: Path, *modules: str) -> None:
    """Modules under ``folder`` that leave ``marker`` when imported."""
    for module in modules:
        path = folder / (module.replace(".", "/") + ".py")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"open({str(marker)!r}, 'a').write({module!r} + '\\n')\n")


async def test_a_batch_task_runs_our_code_not_the_repository_s(
    scripted_server: ScriptedServer, tmp_path: Path
) -> None:
    marker = tmp_path / "imported-from-the-workspace"
    repo = tmp_path / "repo"
    repo.mkdir()
    plant(repo, marker, "pydantic", "httpx", "clover_code.__init__", "clover_code.__main__")
    (repo / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    subprocess.run(["git", "add", "-A"], cwd=repo, check=True)
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "x"],
        cwd=repo,
        check=True,
    )
    scripted_server.responder = answer
    tasks = write_tasks(
        tmp_path / "tasks.jsonl",
        [{"id": "fix", "repo": str(repo), "task": "fix add", "test_command": "true"}],
    )
    code, err = await run_batch(scripted_server, tmp_path, tasks, tmp_path / "out")
    assert code == 0, err
    (record,) = lines(tmp_path / "out" / "results.jsonl")
    assert record["outcome"] == "completed" and record["tests_passed"] is True
    assert not marker.exists(), marker.read_text()


def test_repo_map_workers_run_our_parser_not_the_repository_s(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    marker = tmp_path / "imported-from-the-workspace"
    root = tmp_path / "ws"
    plant(root, marker, "clover_code.__init__", "clover_code.repomap.__init__")
    plant(root, marker, "clover_code.repomap.parse")
    for i in range(PARALLEL_MIN_FILES):
        (root / f"m{i}.py").write_text(f"def f{i}():\n    return {i}\n")
    monkeypatch.chdir(root)  # the app's working directory is the workspace
    todo = [(f"m{i}.py", (root / f"m{i}.py").stat().st_size) for i in range(PARALLEL_MIN_FILES)]
    done = dict(parse_many(FileParser(str(root), 1_000_000), todo, workers=2))
    assert len(done) == PARALLEL_MIN_FILES
    assert not marker.exists(), marker.read_text()
