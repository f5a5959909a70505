"""``clover-code --task`` refuses, with one sentence and exit 2, to work in ``/``
or in clover-code's own config directory, before it reaches the model or
snapshots anything; and past a small checkpoint cap the MCP server goes on
without checkpoints, with a warning."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from mcp import Client

from tests.integration.sse_server import ScriptedServer
from tests.integration.test_headless_e2e import run_clover, sglang
from tests.integration.test_mcp_server_roots import _call, _params

pytestmark = pytest.mark.integration


@pytest.mark.parametrize("where", ["root", "config"])
async def test_headless_refuses_a_folder_that_is_never_a_workspace(
    scripted_server: ScriptedServer, tmp_path: Path, where: str
) -> None:
    cwd = Path("/") if where == "root" else tmp_path / "config" / "clover-code"
    cwd.mkdir(parents=True, exist_ok=True)
    code, _out, err = await run_clover(
        cwd,
        "--task",
        "write config.toml",
        "--base-url",
        scripted_server.base_url,
        "--sandbox",
        "none",
        home=tmp_path,
    )
    assert code == 2, err
    assert "never a workspace" in err and "Traceback" not in err
    assert scripted_server.chat_requests == []
    assert not (tmp_path / "config" / "clover-code" / "config.toml").exists()
    assert not (tmp_path / "data" / "clover-code" / "checkpoints").exists()


async def test_the_mcp_server_goes_on_without_checkpoints_past_the_cap(
    scripted_server: ScriptedServer, tmp_path: Path
) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    for n in range(12):
        (repo / f"{n}.txt").write_text("x\n")
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    (tmp_path / "config" / "clover-code").mkdir(parents=True)
    (tmp_path / "config" / "clover-code" / "config.toml").write_text("checkpoint_max_files = 10\n")
    scripted_server.enqueue(sglang(lambda s: s.content("done")))
    async with Client(_params(scripted_server, tmp_path, tmp_path)) as client:
        outcome = await _call(client, repo, "look around")
    assert outcome["status"] == "success", outcome
    assert any(
        "more than 10 files" in w and "Checkpoints are off" in w for w in outcome["warnings"]
    ), outcome["warnings"]
