"""End to end: headless plan mode and ``--fork`` against the scripted model server.

Plan mode: the model tries to write a file and run a command; both are refused,
the plan it writes is printed, the run exits 0 and the workspace is unchanged.
Fork: a second run forked from the first gets a new session id, sends the first
one's conversation to the model, and leaves the first transcript byte for byte.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from clover_code import protocol as p
from clover_code.outcome.result import parse_stream_line
from tests.integration.sse_server import ScriptedServer
from tests.integration.test_headless_e2e import run_clover, sglang

pytestmark = pytest.mark.integration


def _state(repo: Path) -> dict[str, bytes]:
    return {
        str(path.relative_to(repo)): path.read_bytes()
        for path in sorted(repo.rglob("*"))
        if path.is_file() and ".git" not in path.relative_to(repo).parts
    }


def _started(out: str) -> p.SessionStarted:
    lines = [parse_stream_line(line) for line in out.splitlines()]
    return next(e for e in lines if isinstance(e, p.SessionStarted))


async def test_plan_mode_refuses_changes_prints_the_plan_and_exits_0(
    scripted_server: ScriptedServer, repo: Path, tmp_path: Path
) -> None:
    scripted_server.enqueue(
        sglang(lambda s: s.tool_call("read_file", {"path": "calc.py"})),
        sglang(lambda s: s.tool_call("write_file", {"path": "calc.py", "content": "broken\n"})),
        sglang(lambda s: s.tool_call("shell", {"command": "touch made-by-shell"})),
        sglang(lambda s: s.content("PLAN: 1. In calc.py make add return a + b. ", "2. Test.")),
    )
    before = _state(repo)
    code, out, err = await run_clover(
        repo,
        "--task",
        "fix add",
        "--base-url",
        scripted_server.base_url,
        "--sandbox",
        "none",
        "--approval",
        "plan",
        home=tmp_path,
    )
    assert code == 0, err
    assert "PLAN: 1. In calc.py make add return a + b. 2. Test." in out
    assert _state(repo) == before
    assert "plan mode changes nothing" in err
    requests = [r.json() for r in scripted_server.chat_requests]
    assert len(requests) == 4
    offered = {t["function"]["name"] for t in requests[0]["tools"]}
    assert "read_file" in offered and "todo" in offered
    assert not offered & {"write_file", "edit_file", "shell", "apply_patch"}
    assert "Plan mode" in requests[0]["messages"][0]["content"]
    refusals = [m["content"] for m in requests[3]["messages"] if m["role"] == "tool"]
    assert refusals[1].startswith("refused: plan mode changes nothing")
    assert refusals[2].startswith("refused: plan mode changes nothing")


async def test_fork_continues_a_copy_and_leaves_the_original_untouched(
    scripted_server: ScriptedServer, repo: Path, tmp_path: Path
) -> None:
    common = ("--base-url", scripted_server.base_url, "--sandbox", "none")
    scripted_server.enqueue(sglang(lambda s: s.content("The answer is FORTY-TWO.")))
    code, out, err = await run_clover(
        repo, "--task", "first question", *common, "--output-format", "stream-json", home=tmp_path
    )
    assert code == 0, err
    first = _started(out)
    original = Path(first.transcript)
    saved = original.read_bytes()

    scripted_server.enqueue(sglang(lambda s: s.content("Forked reply.")))
    code, out, err = await run_clover(
        repo,
        "--fork",
        first.session_id,
        "--task",
        "second question",
        *common,
        "--output-format",
        "stream-json",
        home=tmp_path,
    )
    assert code == 0, err
    forked = _started(out)
    assert forked.session_id != first.session_id
    assert Path(forked.transcript) != original
    sent = scripted_server.chat_requests[-1].json()["messages"]
    said = [(m["role"], m["content"]) for m in sent if m["role"] != "system"]
    assert said == [
        ("user", "first question"),
        ("assistant", "The answer is FORTY-TWO."),
        ("user", "second question"),
    ]
    assert original.read_bytes() == saved
