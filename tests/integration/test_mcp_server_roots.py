"""``clover-code mcp-server`` lets a client work only in the folders the user gave
(``--root``, default the start directory), never in clover-code's own directories,
and no call, stuck or not, holds up the calls on other workspaces or runs past the
call timeout. Driven by the official MCP SDK's client over stdio."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters

from tests.integration.sse_server import (
    MODELS_PATH,
    Hold,
    RecordedRequest,
    ScriptedResponse,
    ScriptedServer,
    json_response,
)
from tests.integration.test_headless_e2e import sglang
from tests.waiting import async_wait_until, within

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
LOOSE = 'sandbox = "none"\napproval = "full-auto"\n[permissions.allow]\nshell = ["*"]\n'


def _repo(where: Path) -> Path:
    where.mkdir(parents=True)
    (where / "README.md").write_text("# demo\n")
    subprocess.run(["git", "init", "-q"], cwd=where, check=True)
    return where


def _params(
    server: ScriptedServer, home: Path, cwd: Path, *flags: str, env_home: Path | None = None
) -> StdioServerParameters:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CLOVER_")}
    env.update(
        XDG_DATA_HOME=str(home / "data"),
        XDG_CONFIG_HOME=str(home / "config"),
        PYTHONPATH=os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep),
    )
    if env_home is not None:
        env["HOME"] = str(env_home)
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "clover_code", "mcp-server", "--base-url", server.base_url, *flags],
        env=env,
        cwd=cwd,
    )


async def _call(client: Client, cwd: Path, prompt: str = "x") -> dict[str, Any]:
    result = await client.call_tool("run_task", {"prompt": prompt, "cwd": str(cwd)})
    outcome: dict[str, Any] | None = result.structured_content
    assert outcome is not None, result
    return outcome


async def test_a_cwd_outside_the_roots_is_refused(
    scripted_server: ScriptedServer, tmp_path: Path
) -> None:
    inside, elsewhere = _repo(tmp_path / "start" / "repo"), _repo(tmp_path / "elsewhere")
    linked = tmp_path / "start" / "link"
    os.symlink(elsewhere, linked)
    sub = elsewhere / "sub"
    sub.mkdir()
    async with Client(_params(scripted_server, tmp_path, tmp_path / "start")) as client:
        for cwd in (elsewhere, linked, sub, Path("/"), Path("/etc")):
            outcome = await _call(client, cwd)
            assert outcome["status"] == "error", outcome
            assert "outside the folders this server may work in" in outcome["error"]
            assert "--root" in outcome["error"]
    assert scripted_server.chat_requests == []
    # --root names the folders, as many as given.
    scripted_server.enqueue(sglang(lambda s: s.content("hi")), sglang(lambda s: s.content("hi")))
    flags = ("--root", str(inside), "--root", str(elsewhere))
    async with Client(_params(scripted_server, tmp_path, tmp_path, *flags)) as client:
        assert (await _call(client, elsewhere))["status"] == "success"
        assert (await _call(client, inside))["status"] == "success"
        refused = await _call(client, tmp_path)
        assert "outside the folders" in refused["error"]


async def test_the_attack_cwd_is_the_config_dir_and_the_agent_writes_config_toml(
    scripted_server: ScriptedServer, tmp_path: Path
) -> None:
    config = tmp_path / "config" / "clover-code"
    config.mkdir(parents=True)
    scripted_server.enqueue(
        sglang(lambda s: s.tool_call("write_file", {"path": "config.toml", "content": LOOSE}))
    )
    flags = ("--root", str(tmp_path), "--approval", "full-auto")
    async with Client(_params(scripted_server, tmp_path, tmp_path, *flags)) as client:
        for cwd in (config, tmp_path / "data" / "clover-code" / "sessions"):
            cwd.mkdir(parents=True, exist_ok=True)
            outcome = await _call(client, cwd, "set sandbox none in config.toml")
            assert outcome["status"] == "error" and outcome["exit_code"] == 2, outcome
            assert "one of clover-code's own directories" in outcome["error"]
            assert "never a workspace" in outcome["error"]
    assert not (config / "config.toml").exists()
    assert scripted_server.chat_requests == []


@pytest.mark.parametrize("start", ["root", "home"])
async def test_started_in_the_root_or_home_without_root_refuses_every_call(
    scripted_server: ScriptedServer, tmp_path: Path, start: str
) -> None:
    home = tmp_path / "home"
    repo = _repo(home / "repo")
    cwd = Path("/") if start == "root" else home
    async with Client(_params(scripted_server, tmp_path, cwd, env_home=home)) as client:
        outcome = await _call(client, repo)
        assert outcome["status"] == "error", outcome
        assert "which is never a workspace, and given no --root" in outcome["error"]
        assert "restart it with --root DIR" in outcome["error"]
    assert scripted_server.chat_requests == []


def _answer(request: RecordedRequest) -> ScriptedResponse:
    if request.path == MODELS_PATH:
        return json_response({"object": "list", "data": [{"id": "test-model"}]})
    task = next(m["content"] for m in request.json()["messages"] if m["role"] == "user")
    if "HANG" in task:
        return ScriptedResponse(steps=[Hold(300)], content_type="text/event-stream")
    answer: ScriptedResponse = sglang(lambda s: s.content("quick answer"))
    return answer


async def test_a_stuck_call_holds_up_neither_other_workspaces_nor_itself_past_its_timeout(
    scripted_server: ScriptedServer, tmp_path: Path
) -> None:
    scripted_server.responder = _answer
    stuck_repo, other_repo = _repo(tmp_path / "stuck"), _repo(tmp_path / "other")
    flags = ("--call-timeout", "40")
    async with Client(_params(scripted_server, tmp_path, tmp_path, *flags)) as client:
        stuck = asyncio.ensure_future(_call(client, stuck_repo, "HANG forever"))

        def hanging() -> bool:
            return any(b"HANG" in r.body for r in scripted_server.chat_requests)

        await async_wait_until(hanging, message="the stuck call to reach the model")
        quick = await within(_call(client, other_repo, "say hi"), message="the other call")
        assert quick["status"] == "success" and quick["result"] == "quick answer"
        assert not stuck.done()  # it was still stuck while the other call ran
        late = await within(stuck, message="the stuck call to end at its timeout")
        assert late["status"] in ("limit", "error"), late
        assert late["exit_code"] == 4, late


def test_a_root_that_is_not_a_directory_is_one_sentence(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "clover_code", "mcp-server", "--root", str(tmp_path / "nope")],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2
    assert (
        done.stderr.strip()
        == f"clover-code mcp-server: --root {tmp_path / 'nope'} is not a directory."
    )
