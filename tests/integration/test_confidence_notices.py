"""Said once on every surface, against a real server that reports no fill confidences and
cannot re-denoise (the scripted SGLang-shaped server on loopback): that confidences are
off (where the output carries them: json, stream-json, ACP), and that ``remask_below``
is off (everywhere, text included), through the real ``clover-code`` and ACP commands."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from acp import text_block

from clover_code.outcome.result import TaskResult
from clover_code.protocol.confidence import NO_CONFIDENCE
from tests.integration.sse_server import ScriptedServer
from tests.integration.test_acp import EDITOR_CAPS, EDITOR_INFO, FIX, sglang
from tests.integration.test_acp_harness import EditorClient, spawn_acp
from tests.integration.test_headless_e2e import run_clover

pytestmark = pytest.mark.integration

REMASK_OFF = "Re-denoising (remask_below) is off: the server at"


def three_responses(server: ScriptedServer) -> None:
    """An edit, a read, then the answer: three responses, none with confidences."""
    server.enqueue(
        sglang(lambda s: (s.content("Fixing the sign."), s.tool_call("edit_file", FIX))),
        sglang(lambda s: s.tool_call("read_file", {"path": "calc.py"})),
        sglang(lambda s: s.content("Fixed `add`: ", "it adds now.")),
    )


def said(lines: list[str], opening: str) -> int:
    return sum(line.startswith(opening) for line in lines)


@pytest.mark.parametrize("output", ["json", "stream-json", "text"])
async def test_headless_says_each_once(
    scripted_server: ScriptedServer,
    repo: Path,
    tmp_path: Path,
    headless_argv: tuple[str, ...],
    output: str,
) -> None:
    three_responses(scripted_server)
    code, out, err = await run_clover(
        repo,
        "--task",
        "fix add",
        *headless_argv,
        "--remask-below",
        "0.9",
        "--output-format",
        output,
        home=tmp_path,
    )
    assert code == 0, err
    if output == "json":
        result = TaskResult.model_validate_json(out)
        assert [e.confidence_known for e in result.edits] == [False]
        assert result.warnings.count(NO_CONFIDENCE) == 1
        assert said(result.warnings, REMASK_OFF) == 1
    elif output == "stream-json":
        events = [json.loads(line) for line in out.splitlines()]
        notices = [e["text"] for e in events if e["type"] == "notice" and e["level"] == "warning"]
        assert notices.count(NO_CONFIDENCE) == 1
        assert said(notices, REMASK_OFF) == 1
        responses = [e for e in events if e["type"] == "usage"]
        assert len(responses) == 3  # said once, not once a response
        assert not [e for e in events if e["type"].startswith("answer_confidence")]
    else:  # text carries no confidences: only what the engine cannot do is said
        lines = err.splitlines()
        assert said(lines, f"warning: {REMASK_OFF}") == 1
        assert NO_CONFIDENCE not in err and NO_CONFIDENCE not in out


async def test_acp_says_each_once(
    scripted_server: ScriptedServer, repo: Path, tmp_path: Path
) -> None:
    three_responses(scripted_server)
    scripted_server.enqueue(sglang(lambda s: s.content("Nothing else to do.")))
    client = EditorClient(permission_answers=["allow_once"])
    args = ("--base-url", scripted_server.base_url, "--sandbox", "none", "--remask-below", "0.9")
    async with spawn_acp(client, repo, tmp_path, *args) as (conn, proc):
        await conn.initialize(
            protocol_version=1, client_capabilities=EDITOR_CAPS, client_info=EDITOR_INFO
        )
        new = await conn.new_session(cwd=str(repo), mcp_servers=[])
        for prompt in ("Fix add in calc.py", "Anything else?"):
            done = await conn.prompt(session_id=new.session_id, prompt=[text_block(prompt)])
            assert done.stop_reason == "end_turn"
    assert proc.returncode == 0
    assert client.message_text().count(f"**Warning:** {NO_CONFIDENCE}") == 1
    log = (tmp_path / "agent-stderr.log").read_text()
    assert log.count(REMASK_OFF) == 1
    assert NO_CONFIDENCE not in log
