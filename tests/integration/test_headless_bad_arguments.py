"""Headless ``clover-code --task`` when the model's tool arguments are hostile, over real SSE.

The scripted server sends tool calls whose JSON arguments carry a NUL byte
in a path, a lone UTF-16 surrogate, a number where a path belongs and a
command over its cap (each beside a good call); each must come back to the model as a failed tool
result, the run must go on to the model's answer and exit 0, the
stream-json output must stay valid JSON, and nothing may be written.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.integration.sse_server import ScriptedServer, sse_response
from tests.integration.stream_shapes import SGLangStream
from tests.integration.test_headless_e2e import run_clover

pytestmark = pytest.mark.integration

HOSTILE = [
    ("read_file", {"path": "calc.py\u0000../../etc/passwd"}, "'path' contains a NUL character"),
    ("write_file", {"path": "out\ud800.txt", "content": "x"}, "invalid Unicode character"),
    ("write_file", {"path": 42, "content": "x"}, "'path': input should be a valid string"),
    ("shell", {"command": "echo " + "a" * 200_000}, "'command' is 200.0 kB long"),
]


async def test_hostile_arguments_fail_the_calls_and_the_run_finishes(
    scripted_server: ScriptedServer, tmp_path: Path, headless_argv: tuple[str, ...]
) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    for name, arguments, _ in HOSTILE:
        # With a good call beside it: four malformed responses in a row would
        # (rightly) stop the turn.
        stream = SGLangStream()
        stream.tool_call(name, arguments)
        stream.tool_call("read_file", {"path": "calc.py"})
        scripted_server.enqueue(sse_response(stream.chunks()))
    scripted_server.enqueue(sse_response(SGLangStream().content("Still here.").chunks()))
    code, out, err = await run_clover(
        repo,
        "--task",
        "do it",
        "--output-format",
        "stream-json",
        *headless_argv,
        home=tmp_path / "home",
    )
    assert code == 0, err
    assert "Traceback" not in err
    events = [json.loads(line) for line in out.splitlines()]
    results = [e for e in events if e["type"] == "tool_call_finished"]
    assert [r["status"] for r in results[1::2]] == ["ok"] * len(HOSTILE)
    for result, (name, _, expected) in zip(results[::2], HOSTILE, strict=True):
        assert result["status"] == "error", result
        assert expected in result["result"], (name, result["result"][:300])
    finished = [e for e in events if e["type"] == "turn_finished"]
    assert [e["status"] for e in finished] == ["completed"]
    assert events[-1]["type"] == "result" and events[-1]["result"] == "Still here."
    assert not [e for e in events if e["type"] == "error"]
    assert len(scripted_server.chat_requests) == len(HOSTILE) + 1
    assert sorted(p.name for p in repo.iterdir()) == [".git", "calc.py"]
