"""End to end: the real `clover-code` command against a scripted SSE server.

The server replays SGLang-shaped streams (one chunk per committed block);
the agent reads a file, edits it, runs a command on the host (explicitly
chosen with --sandbox none) and finishes. The repository must end in the
expected state and stdout must parse as protocol events.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from clover_code import protocol as p
from clover_code.outcome.result import TaskResult, parse_stream_line
from tests.integration.sse_server import ScriptedServer, error_response, sse_response
from tests.integration.stream_shapes import SGLangStream
from tests.waiting import read_until, within

pytestmark = pytest.mark.integration


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    (root / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    (root / "check.py").write_text("from calc import add\nassert add(2, 3) == 5, add(2, 3)\n")
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    return root


def sglang(build: Any) -> Any:
    stream = SGLangStream()
    build(stream)
    return sse_response(stream.chunks())


async def clover(
    repo: Path,
    *args: str,
    stdin: bytes | None = None,
    home: Path,
    extra_env: dict[str, str] | None = None,
) -> asyncio.subprocess.Process:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CLOVER_")}
    env.update(XDG_DATA_HOME=str(home / "data"), XDG_CONFIG_HOME=str(home / "config"))
    env.update(extra_env or {})
    return await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "clover_code",
        *args,
        cwd=repo,
        env=env,
        stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


async def run_clover(
    repo: Path, *args: str, home: Path, extra_env: dict[str, str] | None = None
) -> tuple[int, str, str]:
    proc = await clover(repo, *args, home=home, extra_env=extra_env)
    out, err = await within(proc.communicate(), message=f"clover-code {' '.join(args)} to exit")
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()


async def test_read_edit_run_finish(
    scripted_server: ScriptedServer, repo: Path, tmp_path: Path, headless_argv: tuple[str, ...]
) -> None:
    scripted_server.enqueue(
        sglang(
            lambda s: (
                s.reasoning("The add function looks wrong; read it first."),
                s.tool_call("read_file", {"path": "calc.py"}),
            )
        ),
        sglang(
            lambda s: s.tool_call(
                "edit_file",
                {"path": "calc.py", "old_string": "return a - b", "new_string": "return a + b"},
            )
        ),
        sglang(lambda s: s.tool_call("shell", {"command": "python3 check.py && echo CHECK-OK"})),
        sglang(lambda s: s.content("Fixed `add`: it subtracted. ", "check.py passes now.")),
    )
    code, out, err = await run_clover(
        repo,
        "--task",
        "fix add",
        *headless_argv,
        "--output-format",
        "stream-json",
        home=tmp_path,
    )
    assert code == 0, err
    assert (repo / "calc.py").read_text() == "def add(a, b):\n    return a + b\n"
    *events, result = [parse_stream_line(line) for line in out.splitlines()]
    kinds = [e.type for e in events]
    assert kinds[0] == "session_started" and kinds[-1] == "session_ended"
    finished = [e for e in events if isinstance(e, p.TurnFinished)]
    assert finished[0].status == "completed" and finished[0].model_requests == 4
    assert isinstance(result, TaskResult) and result.status == "success"
    assert "check.py passes now." in result.result and result.turns == 4
    results = [e for e in events if isinstance(e, p.ToolCallFinished)]
    assert [r.name for r in results] == ["read_file", "edit_file", "shell"]
    assert all(r.status == "ok" for r in results)
    assert "CHECK-OK" in results[2].result and results[2].display.exit_code == 0
    blocks = [e for e in events if isinstance(e, p.BlockCommitted)]
    assert blocks and [b.block for b in blocks] == list(range(len(blocks)))
    # the host sandbox warning reaches headless output
    assert any(isinstance(e, p.Notice) and e.level == "warning" for e in events)
    # the model saw each tool result in the following request
    requests = scripted_server.chat_requests
    assert len(requests) == 4
    last_messages = requests[3].json()["messages"]
    assert last_messages[-1]["role"] == "tool" and "CHECK-OK" in last_messages[-1]["content"]
    assert {t["function"]["name"] for t in requests[0].json()["tools"]} >= {
        "read_file",
        "edit_file",
        "shell",
    }


async def test_raw_qwen3_text_is_parsed_client_side(
    scripted_server: ScriptedServer, repo: Path, tmp_path: Path
) -> None:
    """A server without reasoning/tool parsers: raw Qwen3 text in 32-token blocks."""
    call = (
        "<tool_call>\n<function=write_file>\n<parameter=path>\nNOTES.md\n</parameter>\n"
        "<parameter=content>\n# Notes\n\n  indented line\n</parameter>\n</function>\n</tool_call>"
    )
    scripted_server.enqueue(
        sglang(
            lambda s: s.content("I should write the notes.", "</think>\n\n", call[:40], call[40:])
        ),
        sglang(lambda s: s.content("Done.</think>\n\nWrote NOTES.md.")),
    )
    code, out, err = await run_clover(
        repo,
        "--task",
        "write notes",
        "--base-url",
        scripted_server.base_url,
        "--output-format",
        "json",
        home=tmp_path,
    )
    assert code == 0, err
    result = json.loads(out)
    assert result["status"] == "success" and result["tool_calls"] == 1
    assert (repo / "NOTES.md").read_text() == "# Notes\n\n  indented line"


async def test_text_output_and_no_shell_without_sandbox(
    scripted_server: ScriptedServer, repo: Path, tmp_path: Path
) -> None:
    scripted_server.enqueue(
        sglang(lambda s: s.tool_call("shell", {"command": "touch PWNED"})),
        sglang(lambda s: s.content("I could not run commands.")),
    )
    # --sandbox auto where no Docker daemon answers and no bwrap is on PATH:
    # the shell is off, never silently the host. (An explicit --sandbox that
    # cannot run is exit 3: test_sandbox_root.py.)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "git").symlink_to(shutil.which("git") or "/usr/bin/git")
    code, out, err = await run_clover(
        repo,
        "--task",
        "run it",
        "--base-url",
        scripted_server.base_url,
        "--sandbox",
        "auto",
        home=tmp_path,
        extra_env={"DOCKER_HOST": f"unix://{tmp_path}/no-docker.sock", "PATH": str(bin_dir)},
    )
    assert code == 0
    assert out.strip() == "I could not run commands."
    assert "the shell tool is off" in err
    assert (
        "unknown tool 'shell'" in scripted_server.chat_requests[1].json()["messages"][-1]["content"]
    )
    assert not (repo / "PWNED").exists()


@pytest.mark.parametrize(
    ("setup", "expect"),
    [
        ("unreachable", "cannot reach the model server"),
        ("model", "does not serve the model 'nope'"),
        ("key", "refused the API key"),
    ],
)
async def test_engine_problems_exit_3(
    scripted_server: ScriptedServer,
    repo: Path,
    tmp_path: Path,
    closed_port_url: str,
    setup: str,
    expect: str,
) -> None:
    url = scripted_server.base_url
    extra: list[str] = []
    if setup == "unreachable":
        url = closed_port_url
    elif setup == "model":
        extra = ["--model", "nope"]
    else:
        scripted_server.enqueue(error_response(401, "invalid api key"), path="/v1/models")
    code, _out, err = await run_clover(
        repo, "--task", "x", "--base-url", url, "--max-turns", "1", *extra, home=tmp_path
    )
    assert code == 3, err
    assert expect.lower() in err.lower() and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1


async def test_ctrl_c_keeps_transcript_and_continue_resumes(
    scripted_server: ScriptedServer, repo: Path, tmp_path: Path
) -> None:
    stream = SGLangStream()
    stream.content("Partial answer, first block. ", "Second block. ")
    scripted_server.enqueue(sse_response(stream.chunks()[:3], hold=True))
    proc = await clover(
        repo, "--task", "explain", "--base-url", scripted_server.base_url, home=tmp_path
    )
    assert proc.stdout is not None
    seen = await read_until(
        proc.stdout, b"Second block.", message="the second streamed block on stdout"
    )
    assert seen.startswith(b"Partial answer")
    proc.send_signal(signal.SIGINT)
    _out, err = await within(proc.communicate(), message="clover-code to exit after Ctrl+C")
    assert proc.returncode == 130, err
    assert b"the transcript is saved" in err and b"Traceback" not in err
    assert await scripted_server.wait_for_disconnect(), "the model request was not abandoned"

    sessions = list((tmp_path / "data/clover-code/sessions").glob("*.jsonl"))
    assert len(sessions) == 1
    records = [json.loads(line) for line in sessions[0].read_text().splitlines()]
    messages = [r["message"] for r in records if r["kind"] == "message"]
    assert messages[-1]["content"].startswith("Partial answer, first block. Second block.")
    assert messages[-1]["content"].endswith("[interrupted by the user]")

    scripted_server.enqueue(sglang(lambda s: s.content("Continuing.")))
    code, _out2, err2 = await run_clover(
        repo,
        "--continue",
        "--task",
        "go on",
        "--base-url",
        scripted_server.base_url,
        home=tmp_path,
    )
    assert code == 0, err2
    sent = scripted_server.chat_requests[-1].json()["messages"]
    assert [m["role"] for m in sent] == ["system", "user", "assistant", "user"]


async def test_auto_commit_commits_the_agents_change(
    scripted_server: ScriptedServer, repo: Path, tmp_path: Path
) -> None:
    subprocess.run(["git", "add", "."], cwd=repo, check=True)
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "base"],
        cwd=repo,
        check=True,
    )
    scripted_server.enqueue(
        sglang(
            lambda s: s.tool_call(
                "edit_file",
                {"path": "calc.py", "old_string": "return a - b", "new_string": "return a + b"},
            )
        ),
        sglang(lambda s: s.content("Fixed.")),
    )
    code, _out, err = await run_clover(
        repo,
        "--task",
        "fix add in calc.py",
        "--base-url",
        scripted_server.base_url,
        "--auto-commit",
        home=tmp_path,
    )
    assert code == 0, err
    log = subprocess.run(
        ["git", "log", "--format=%s", "-n", "2"], cwd=repo, capture_output=True, text=True
    ).stdout.splitlines()
    assert log[0].startswith("clover-code: fix add in calc.py") and log[1] == "base"
    status = subprocess.run(
        ["git", "status", "--porcelain"], cwd=repo, capture_output=True, text=True
    ).stdout
    assert status == ""
