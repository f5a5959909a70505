"""Custom commands end to end: real command files, headless `--task "/name args"` and ACP.

The command's prompt reaches the model expanded (arguments, an included
file), its allowed-tools narrow what the model is offered and may call, and
an editor sees the commands as available commands and can run one.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from acp import text_block

from clover_code import protocol as p
from clover_code.outcome.result import TaskResult, parse_stream_line
from tests.integration.sse_server import ScriptedServer
from tests.integration.test_acp_harness import EditorClient, spawn_acp
from tests.integration.test_headless_e2e import run_clover, sglang

pytestmark = pytest.mark.integration

REVIEW = """\
---
description: Review one file for bugs
argument-hint: FILE [FOCUS]
allowed-tools: read_file, grep
---
Review @$1 with a focus on $2. Do not change anything.
"""


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    (root / ".clover" / "commands" / "frontend").mkdir(parents=True)
    (root / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    (root / ".clover" / "commands" / "recheck.md").write_text(REVIEW)
    (root / ".clover" / "commands" / "frontend" / "lint.md").write_text(
        "---\ndescription: Lint the frontend\n---\nLint $ARGUMENTS.\n"
    )
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    return root


async def test_headless_task_runs_a_command(
    scripted_server: ScriptedServer, repo: Path, tmp_path: Path
) -> None:
    scripted_server.enqueue(
        sglang(lambda s: s.tool_call("write_file", {"path": "calc.py", "content": "oops"})),
        sglang(lambda s: s.content("add subtracts: a bug.")),
    )
    code, out, err = await run_clover(
        repo,
        "--task",
        "/recheck calc.py signs",
        "--base-url",
        scripted_server.base_url,
        "--approval",
        "full-auto",
        "--output-format",
        "stream-json",
        home=tmp_path / "home",
    )
    assert code == 0, err
    *events, result = [parse_stream_line(line) for line in out.splitlines()]
    assert isinstance(result, TaskResult) and result.status == "success"
    first = scripted_server.chat_requests[0].json()
    prompt = first["messages"][-1]["content"]
    assert prompt.startswith("Review @calc.py with a focus on signs. Do not change anything.")
    assert '<file path="calc.py">\ndef add(a, b):\n    return a - b\n</file>' in prompt
    assert sorted(t["function"]["name"] for t in first["tools"]) == ["grep", "read_file"]
    refused = next(e for e in events if isinstance(e, p.ToolCallFinished))
    assert refused.status == "denied" and "allows only these tools" in refused.result
    assert (repo / "calc.py").read_text() == "def add(a, b):\n    return a - b\n"


async def test_acp_lists_and_runs_commands(
    scripted_server: ScriptedServer, repo: Path, tmp_path: Path
) -> None:
    scripted_server.enqueue(sglang(lambda s: s.content("Linted.")))
    client = EditorClient()
    args = ("--base-url", scripted_server.base_url, "--sandbox", "none")
    async with spawn_acp(client, repo, tmp_path, *args) as (conn, _proc):
        await conn.initialize(protocol_version=1)
        new = await conn.new_session(cwd=str(repo), mcp_servers=[])
        await client.wait_for(
            lambda: any(u.session_update == "available_commands_update" for u in client.updates)
        )
        update = next(u for u in client.updates if u.session_update == "available_commands_update")
        listed = {c.name: c for c in update.available_commands}
        assert sorted(listed) == ["frontend:lint", "recheck"]
        assert listed["recheck"].description == "Review one file for bugs"
        assert listed["recheck"].input.root.hint == "FILE [FOCUS]"
        done = await conn.prompt(
            session_id=new.session_id, prompt=[text_block("/frontend:lint src/app.ts")]
        )
        assert done.stop_reason == "end_turn"
    sent = scripted_server.chat_requests[0].json()["messages"][-1]["content"]
    assert sent == "Lint src/app.ts."
