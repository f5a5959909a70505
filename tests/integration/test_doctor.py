"""`clover-code doctor` against a real scripted server and real config files.

Each case runs the real command in a subprocess and reads its ``--json`` report;
the server is the scripted loopback server, so the probe requests are real HTTP.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.integration.sse_server import ScriptedServer, json_response
from tests.waiting import within

pytestmark = pytest.mark.integration

KEY = "sk-doctor-test-0123456789"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    return root


async def doctor(
    repo: Path, home: Path, *args: str, env_extra: dict[str, str] | None = None
) -> tuple[int, dict[str, Any], str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CLOVER_")}
    env.update(XDG_DATA_HOME=str(home / "data"), XDG_CONFIG_HOME=str(home / "config"))
    env.update(env_extra or {})
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-P",
        "-m",
        "clover_code",
        "doctor",
        "--json",
        *args,
        cwd=repo,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    out, err = await within(proc.communicate(), message="clover-code doctor to exit")
    assert proc.returncode is not None
    report: dict[str, Any] = json.loads(out)
    return proc.returncode, report, out.decode() + err.decode()


def check(report: dict[str, Any], name: str) -> dict[str, Any]:
    found = [c for c in report["checks"] if c["name"] == name]
    assert len(found) == 1, (name, report)
    one: dict[str, Any] = found[0]
    return one


def tool_answer(message: dict[str, Any]) -> Any:
    return json_response({"choices": [{"index": 0, "message": message}]})


async def test_a_server_that_calls_tools_passes(
    scripted_server: ScriptedServer, repo: Path, tmp_path: Path
) -> None:
    call = {"id": "c1", "type": "function", "function": {"name": "ping", "arguments": "{}"}}
    scripted_server.enqueue(
        tool_answer({"role": "assistant", "content": None, "tool_calls": [call]})
    )
    scripted_server.enqueue(
        json_response({"default_generation_settings": {"n_ctx": 8192}}), path="/props"
    )
    code, report, raw = await doctor(
        repo, tmp_path, "--base-url", scripted_server.base_url, "--api-key", KEY
    )
    assert check(report, "server")["state"] == "ok"
    assert "test-model" in check(report, "server")["detail"]
    assert check(report, "tool calling")["state"] == "ok"
    window = check(report, "context window")
    assert window["state"] == "warn" and "8,192" in window["detail"]
    assert "CLOVER_CONTEXT_WINDOW=8192" in window["fix"]
    probe = scripted_server.chat_requests[0].json()
    assert probe["tools"][0]["function"]["name"] == "ping"
    assert scripted_server.chat_requests[0].headers["authorization"] == f"Bearer {KEY}"
    assert KEY not in raw
    assert code == (1 if any(c["state"] == "fail" for c in report["checks"]) else 0)


async def test_a_model_that_answers_text_is_a_warning(
    scripted_server: ScriptedServer, repo: Path, tmp_path: Path
) -> None:
    scripted_server.enqueue(tool_answer({"role": "assistant", "content": "pong, I think"}))
    _, report, _ = await doctor(repo, tmp_path, "--base-url", scripted_server.base_url)
    tools = check(report, "tool calling")
    assert tools["state"] == "warn" and "pong" in tools["detail"]
    assert "--jinja" in tools["fix"]


async def test_no_server_configured_fails_and_says_how(repo: Path, tmp_path: Path) -> None:
    code, report, _ = await doctor(repo, tmp_path)
    server = check(report, "server")
    assert server["state"] == "fail" and "--base-url" in server["fix"]
    assert code == 1 and report["ok"] is False


async def test_an_unreachable_server_hides_its_credentials(
    closed_port_url: str, repo: Path, tmp_path: Path
) -> None:
    url = closed_port_url.replace("http://", "http://user:hunter2@")
    code, report, raw = await doctor(repo, tmp_path, "--base-url", url)
    assert check(report, "server")["state"] == "fail"
    assert "hunter2" not in raw and code == 1


async def test_config_problems_are_named(repo: Path, tmp_path: Path) -> None:
    (tmp_path / "config" / "clover-code").mkdir(parents=True)
    user = tmp_path / "config" / "clover-code" / "config.toml"
    user.write_text("context_window = 'lots'\n")
    _, report, _ = await doctor(repo, tmp_path, "--no-server")
    settings = check(report, "settings")
    assert settings["state"] == "fail" and "context_window" in settings["detail"]
    user.write_text("")
    (repo / ".clover").mkdir()
    (repo / ".clover" / "config.toml").write_text('approval = "full-auto"\n')
    _, report, _ = await doctor(repo, tmp_path, "--no-server")
    project = check(report, ".clover/config.toml")
    assert project["state"] == "warn" and "approval" in project["detail"]
    assert "--trust-project" in project["fix"]


async def test_the_sandbox_rows_match_the_machine(repo: Path, tmp_path: Path) -> None:
    from clover_code.tools.sandbox.bwrap_identity import bwrap_problem
    from clover_code.tools.sandbox.policy import sandbox_user

    _, report, _ = await doctor(repo, tmp_path, "--no-server")
    works = bwrap_problem(user=sandbox_user(repo)) is None
    assert (check(report, "bubblewrap")["state"] == "ok") is works
    shell = check(report, "shell tool")
    docker = check(report, "docker")["state"] == "ok"
    assert shell["state"] == ("ok" if works or docker else "fail")
    if shell["state"] == "fail":
        assert "apt-get install bubblewrap" in shell["fix"]


async def test_no_sandbox_at_all_fails_with_one_command_per_system(
    repo: Path, tmp_path: Path
) -> None:
    bare = tmp_path / "bin"
    bare.mkdir()
    (bare / "git").symlink_to(shutil.which("git") or "/usr/bin/git")
    env = {"PATH": str(bare), "DOCKER_HOST": f"unix://{tmp_path}/no-docker.sock"}
    code, report, _ = await doctor(repo, tmp_path, "--no-server", env_extra=env)
    assert check(report, "docker")["state"] == "info"
    assert check(report, "bubblewrap")["state"] == "info"
    shell = check(report, "shell tool")
    assert shell["state"] == "fail" and code == 1
    for system in ("apt-get install bubblewrap", "dnf install", "pacman -S", "Docker Desktop"):
        assert system in shell["fix"]
