"""How a headless run ends, as a pipeline reads it: the real `clover-code` command
against a scripted model server.

SIGTERM (what CI runners and `timeout` send) ends the run as Ctrl+C does: the
transcript saved, the one result printed (status ``interrupted``), exit 143. A
server that answered in this run and then breaks off is the agent's error (exit
1), not "no engine" (exit 3). A final answer cut by the token limit is a limit
(exit 4, ``exit_reason`` ``max_tokens``).
"""

from __future__ import annotations

import json
import signal
import subprocess
from pathlib import Path

import pytest

from clover_code import protocol as p
from clover_code.outcome.result import TaskResult, parse_stream_line
from tests.integration.sse_server import (
    MODELS_PATH,
    ScriptedResponse,
    ScriptedServer,
    sse_response,
)
from tests.integration.stream_shapes import SGLangStream
from tests.integration.test_headless_e2e import clover, run_clover, sglang
from tests.waiting import async_wait_until, read_until, within

pytestmark = pytest.mark.integration


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    (root / "notes.txt").write_text("hello\n")
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    return root


@pytest.mark.parametrize("output_format", ["json", "stream-json"])
async def test_sigterm_saves_prints_the_result_and_exits_143(
    scripted_server: ScriptedServer, repo: Path, tmp_path: Path, output_format: str
) -> None:
    stream = SGLangStream()
    stream.content("Partial answer, first block. ", "Second block. ")
    scripted_server.enqueue(sse_response(stream.chunks()[:3], hold=True))
    proc = await clover(
        repo,
        "--task",
        "explain",
        "--base-url",
        scripted_server.base_url,
        "--output-format",
        output_format,
        home=tmp_path,
    )
    assert proc.stdout is not None
    if output_format == "stream-json":
        await read_until(proc.stdout, b"Second block.", message="the second block streamed")
    else:
        await async_wait_until(
            lambda: bool(scripted_server.chat_requests), message="the model request"
        )
    proc.send_signal(signal.SIGTERM)
    out, err = await within(proc.communicate(), message="clover-code to exit after SIGTERM")
    assert proc.returncode == 143, err
    assert b"the transcript is saved" in err and b"Traceback" not in err
    result = TaskResult.model_validate_json(out.decode().strip().splitlines()[-1])
    assert result.status == "interrupted" and result.exit_code == 143
    assert result.exit_reason == "interrupted"
    assert await scripted_server.wait_for_disconnect(), "the model request was not abandoned"
    [session] = list((tmp_path / "data/clover-code/sessions").glob("*.jsonl"))
    kinds = [json.loads(line).get("event", {}).get("type") for line in session.open()]
    assert "turn_finished" in kinds


def _tool_then(server: ScriptedServer, *later: ScriptedResponse) -> None:
    server.enqueue(sglang(lambda s: s.tool_call("read_file", {"path": "notes.txt"})), *later)


async def test_a_server_that_answered_then_drops_is_an_agent_error(
    scripted_server: ScriptedServer, repo: Path, tmp_path: Path
) -> None:
    # It answers the first request, then drops every later connection at once.
    dropped = [sse_response([], drop_after=0) for _ in range(2)]
    _tool_then(scripted_server, *dropped)
    code, out, err = await run_clover(
        repo,
        "--task",
        "read the notes",
        "--base-url",
        scripted_server.base_url,
        "--output-format",
        "json",
        home=tmp_path,
        extra_env={"CLOVER_MAX_RETRIES": "1"},
    )
    assert code == 1, err
    result = TaskResult.model_validate_json(out)
    assert (result.status, result.exit_reason) == ("error", "agent_error")
    assert result.error is not None and "answered earlier in this run" in result.error
    assert "cannot reach" not in result.error and "Traceback" not in err


async def test_an_answer_cut_by_max_tokens_is_a_limit(
    scripted_server: ScriptedServer, repo: Path, tmp_path: Path
) -> None:
    stream = SGLangStream().content("The notes say hel")
    scripted_server.enqueue(sse_response(stream.chunks(finish_reason="length")))
    code, out, err = await run_clover(
        repo,
        "--task",
        "what do the notes say?",
        "--base-url",
        scripted_server.base_url,
        "--max-tokens",
        "5",
        "--output-format",
        "json",
        home=tmp_path,
    )
    assert code == 4, err
    result = TaskResult.model_validate_json(out)
    assert (result.status, result.exit_code, result.exit_reason) == ("limit", 4, "max_tokens")
    assert result.result == "The notes say hel"
    assert result.error is not None and "--max-tokens 5" in result.error


async def test_a_tool_call_response_cut_by_max_tokens_does_not_end_the_run(
    scripted_server: ScriptedServer, repo: Path, tmp_path: Path
) -> None:
    """Only the final answer counts: the turn goes on after a cut that called a tool."""
    call = SGLangStream()
    call.tool_call("read_file", {"path": "notes.txt"})
    scripted_server.enqueue(
        sse_response(call.chunks(finish_reason="length")),
        sglang(lambda s: s.content("They say hello.")),
    )
    code, out, err = await run_clover(
        repo,
        "--task",
        "what do the notes say?",
        "--base-url",
        scripted_server.base_url,
        "--output-format",
        "stream-json",
        home=tmp_path,
    )
    assert code == 0, err
    *events, result = [parse_stream_line(line) for line in out.splitlines()]
    finished = [e for e in events if isinstance(e, p.TurnFinished)]
    assert finished[-1].status == "completed" and finished[-1].token_limit is False
    assert isinstance(result, TaskResult) and result.exit_reason == "completed"


async def test_sigterm_before_the_session_is_ready_still_prints_the_result(
    scripted_server: ScriptedServer, repo: Path, tmp_path: Path
) -> None:
    # The model list never arrives: the run is still opening its session.
    scripted_server.enqueue(sse_response([], hold=True), path=MODELS_PATH)
    proc = await clover(
        repo,
        "--task",
        "explain",
        "--base-url",
        scripted_server.base_url,
        "--output-format",
        "json",
        home=tmp_path,
    )
    await async_wait_until(lambda: bool(scripted_server.requests), message="the model list request")
    proc.send_signal(signal.SIGTERM)
    out, err = await within(proc.communicate(), message="clover-code to exit after SIGTERM")
    assert proc.returncode == 143, err
    result = TaskResult.model_validate_json(out)
    assert (result.status, result.exit_code, result.exit_reason) == (
        "interrupted",
        143,
        "interrupted",
    )
    assert b"nothing was done" in err and b"Traceback" not in err
