"""Every tool's arguments nested deep, as huge arrays and with surrogate escapes, end to end.

The scripted server streams each call's JSON arguments verbatim (they could
not be built with ``json.dumps``: 5,000 levels would overflow it too). Each
hostile call must come back to the model as a failed tool result with one
sentence, beside a good call that still runs; the run goes on to the model's
answer. Through headless stream-json (every line JSON), headless json (one
result object), ACP (a failed tool call update, then ``end_turn``) and the
GitHub bot (the answer in the comment, no pull request, no traceback).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from acp import text_block

from tests.integration import test_github
from tests.integration.github_api_server import FakeGitHub
from tests.integration.sse_server import ScriptedServer, sse_response
from tests.integration.stream_shapes import LlamaCppStream
from tests.integration.test_acp_harness import EditorClient, spawn_acp
from tests.integration.test_github import REPOSITORY, Act
from tests.integration.test_headless_e2e import run_clover

pytestmark = pytest.mark.integration

# The GitHub bot's fixtures: a fake GitHub, a bare remote, the job's checkout.
github = test_github.github
remote = test_github.remote
checkout = test_github.checkout
act = test_github.act

DEPTH = 5000
# The argument each tool's hostile value goes in (any of them would do).
ARGUMENT = {
    "read_file": "path",
    "write_file": "path",
    "edit_file": "old_string",
    "apply_patch": "patch",
    "list_files": "path",
    "glob": "pattern",
    "grep": "pattern",
    "repo_map": "focus",
    "todo": "items",
    "shell": "command",
    "read_output": "id",
    "web_fetch": "url",
    "task": "prompt",
}
# Each class: the arguments' JSON text for one argument name, and what the error says.
CLASSES: dict[str, tuple[str, str]] = {
    "deep": ('{"%s": ' + "[" * DEPTH + "]" * DEPTH + "}", "nested 5001 levels deep"),
    "deep-objects": ('{"%s": ' + '{"a": ' * DEPTH + "1" + "}" * DEPTH + "}", "5001 levels deep"),
    "deep-unclosed": ('{"%s": ' + "[" * DEPTH, "nested 5001 levels deep"),
    "moderately-deep": ('{"%s": ' + "[" * 40 + "]" * 40 + "}", "more than 16 levels deep"),
    "huge-array": ('{"%s": [' + ",".join(["1"] * 100_000) + "]}", "100,000 elements"),
    "huge-object": (
        '{"%s": {' + ",".join(f'"k{i}": 1' for i in range(20_000)) + "}}",
        "20,000 elements",
    ),
    "surrogate-escape": ('{"%s": "caf\\udcff\\udcfe"}', "invalid Unicode character"),
    "surrogate-key": ('{"%s": "x", "\\ud800": 1}', "invalid Unicode character"),
}


def _raw(case: str, tool: str) -> str:
    template, _ = CLASSES[case]
    return template.replace("%s", ARGUMENT[tool], 1)


def _repo(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    return repo


def _script(server: ScriptedServer, cases: list[tuple[str, str]]) -> None:
    for case, tool in cases:
        # A good call beside each: several malformed responses in a row would
        # (rightly) stop the turn.
        stream = LlamaCppStream()
        raw = _raw(case, tool)
        stream.tool_call(tool, raw, fragment=len(raw))
        stream.tool_call("read_file", {"path": "calc.py"})
        server.enqueue(sse_response(stream.chunks()))
    server.enqueue(sse_response(LlamaCppStream().content("Still here.").chunks()))


ALL_CASES = [(case, tool) for case in CLASSES for tool in ARGUMENT]


async def test_every_tool_every_class_through_stream_json(
    scripted_server: ScriptedServer, tmp_path: Path, headless_argv: tuple[str, ...]
) -> None:
    repo = _repo(tmp_path)
    _script(scripted_server, ALL_CASES)
    code, out, err = await run_clover(
        repo,
        "--task",
        "do it",
        "--output-format",
        "stream-json",
        *headless_argv,
        "--max-turns",
        str(len(ALL_CASES) + 5),
        home=tmp_path / "home",
    )
    assert code == 0, err[-3000:]
    assert "Traceback" not in err
    events = [json.loads(line) for line in out.splitlines()]
    results = [e for e in events if e["type"] == "tool_call_finished"]
    assert len(results) == 2 * len(ALL_CASES)
    assert [r["status"] for r in results[1::2]] == ["ok"] * len(ALL_CASES)
    for result, (case, tool) in zip(results[::2], ALL_CASES, strict=True):
        where = f"{tool} {case}: {result['result'][:300]}"
        assert result["status"] == "error", where
        assert CLASSES[case][1] in result["result"], where
        assert "Traceback" not in result["result"], where
    assert events[-1]["type"] == "result" and events[-1]["result"] == "Still here."
    assert sorted(p.name for p in repo.iterdir()) == [".git", "calc.py"]


async def test_deep_arguments_through_json(
    scripted_server: ScriptedServer, tmp_path: Path, headless_argv: tuple[str, ...]
) -> None:
    repo = _repo(tmp_path)
    _script(scripted_server, [("deep", "read_file"), ("surrogate-escape", "write_file")])
    code, out, err = await run_clover(
        repo,
        "--task",
        "do it",
        "--output-format",
        "json",
        *headless_argv,
        home=tmp_path / "home",
    )
    assert code == 0, err[-3000:]
    (line,) = out.splitlines()
    result = json.loads(line)
    assert result["status"] == "success" and result["result"] == "Still here."
    assert result["tool_calls"] == 4


async def test_deep_arguments_through_acp(scripted_server: ScriptedServer, tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    cases = [("deep", "read_file"), ("huge-array", "repo_map"), ("surrogate-escape", "shell")]
    _script(scripted_server, cases)
    client = EditorClient()
    args = ("--base-url", scripted_server.base_url, "--sandbox", "none")
    async with spawn_acp(client, repo, tmp_path, *args) as (conn, _proc):
        await conn.initialize(protocol_version=1)
        session = await conn.new_session(cwd=str(repo), mcp_servers=[])
        await conn.set_session_mode(session_id=session.session_id, mode_id="full-auto")
        done = await conn.prompt(session_id=session.session_id, prompt=[text_block("do it")])
        assert done.stop_reason == "end_turn"
    failed = [
        u for u in client.updates if u.session_update == "tool_call_update" and u.status == "failed"
    ]
    assert len(failed) == len(cases)
    texts = [json.dumps(u.model_dump(mode="json")) for u in failed]
    for text, (case, _) in zip(texts, cases, strict=True):
        assert CLASSES[case][1] in text, text[:400]
    assert "Still here." in client.message_text()


async def test_deep_arguments_through_the_github_bot(
    scripted_server: ScriptedServer, github: FakeGitHub, act: Act
) -> None:
    _script(scripted_server, [("deep", "shell"), ("huge-array", "grep"), ("surrogate-key", "glob")])
    code, out = await act("issue_comment.json", "issue_comment")
    assert code == 0, out
    assert "Traceback" not in out
    assert "\n\nStill here.\n" in github.comments[9000]
    assert not github.calls_to("POST", rf"/repos/{REPOSITORY}/pulls")
