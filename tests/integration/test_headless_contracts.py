"""End to end: the contracts of headless mode, on the real `clover-code` command.

Exit codes for a refused key and a bad --base-url, the default max_tokens on
the wire, --timeout on a stalled stream / server / tool, one JSON result shape
for every way a run ends, and stream-json carrying each piece of text once.
The model is the scripted SSE server; the command is a real subprocess.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from clover_code import protocol as p
from clover_code.engine.remote.max_tokens import MAX_TOKENS_CAP
from clover_code.outcome.result import STATUS_EXIT_CODES, TaskResult, parse_stream_line
from tests.integration.sse_server import (
    MODELS_PATH,
    Hold,
    ScriptedResponse,
    ScriptedServer,
    error_response,
    sse_response,
)
from tests.integration.stream_shapes import SGLangStream
from tests.integration.test_headless_e2e import clover, run_clover, sglang

pytestmark = pytest.mark.integration

RESULT_KEYS = set(TaskResult.model_fields)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A small git repository to run tasks in."""
    root = tmp_path / "repo"
    root.mkdir()
    (root / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    return root


# No sandbox to set up (Docker may build its image on first use); the host is
# chosen explicitly, which headless reports as a warning.
HOST = ("--sandbox", "none")


# Generous: the limit counts from the start of the run, and starting Python
# and opening the session take seconds on a busy machine.
LIMIT = "20"


def problems(err: str) -> list[str]:
    """stderr without the warning about running on the host."""
    return [line for line in err.strip().splitlines() if not line.startswith("warning: ")]


def one_result(out: str) -> TaskResult:
    """The single JSON object `--output-format json` prints, validated."""
    lines = out.strip().splitlines()
    assert len(lines) == 1, out
    result = TaskResult.model_validate_json(lines[0])
    assert set(json.loads(lines[0])) == RESULT_KEYS
    assert result.exit_code in STATUS_EXIT_CODES[result.status]
    return result


def stream_lines(out: str) -> list[p.Event | TaskResult]:
    return [parse_stream_line(line) for line in out.splitlines()]


def held(stream: SGLangStream, count: int) -> ScriptedResponse:
    """The first ``count`` chunks of ``stream``, then the server stalls."""
    return sse_response(stream.chunks()[:count], hold=True)


# ---------------------------------------------------------------- exit codes


@pytest.mark.parametrize("status", [401, 403])
async def test_key_refused_on_chat_exits_3_with_one_sentence(
    scripted_server: ScriptedServer, repo: Path, tmp_path: Path, status: int
) -> None:
    scripted_server.enqueue(error_response(status, "invalid api key"))
    base = ("--task", "x", "--base-url", scripted_server.base_url, "--api-key", "wrong", *HOST)
    code, out, err = await run_clover(repo, *base, home=tmp_path)
    assert code == 3, err
    assert out == "" and "Traceback" not in err
    assert len(problems(err)) == 1 and "refused the API key" in err

    scripted_server.enqueue(error_response(status, "invalid api key"))
    code, out, err = await run_clover(repo, *base, "--output-format", "json", home=tmp_path)
    assert code == 3, err
    result = one_result(out)
    assert (result.status, result.exit_code) == ("error", 3)
    assert result.error is not None and "refused the API key" in result.error
    assert "\n" not in result.error and f"HTTP {status}" in result.error
    assert result.session_id is not None and result.turns == 1


@pytest.mark.parametrize(
    ("url", "expect"),
    [
        ("localhost:30000/v1", "has no scheme"),
        ("ftp://example.com/v1", "scheme 'ftp' is not supported"),
    ],
)
async def test_bad_base_url_is_a_usage_error_naming_the_flag(
    repo: Path, tmp_path: Path, url: str, expect: str
) -> None:
    code, out, err = await run_clover(repo, "--task", "x", "--base-url", url, home=tmp_path)
    assert code == 2, err
    assert out == "" and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1
    assert "--base-url" in err and expect in err and "http://" in err


# ---------------------------------------------------------------- max_tokens


async def test_default_max_tokens_is_sent_and_the_setting_overrides_it(
    scripted_server: ScriptedServer, repo: Path, tmp_path: Path
) -> None:
    scripted_server.enqueue(sglang(lambda s: s.content("One.")))
    code, _out, err = await run_clover(
        repo, "--task", "x", "--base-url", scripted_server.base_url, *HOST, home=tmp_path
    )
    assert code == 0, err
    # The default window (131072) leaves far more than the cap after a small prompt.
    assert scripted_server.chat_requests[-1].json()["max_tokens"] == MAX_TOKENS_CAP

    scripted_server.enqueue(sglang(lambda s: s.content("Two.")))
    code, _out, err = await run_clover(
        repo,
        "--task",
        "x",
        "--base-url",
        scripted_server.base_url,
        *HOST,
        home=tmp_path,
        extra_env={"CLOVER_MAX_TOKENS": "777"},
    )
    assert code == 0, err
    assert scripted_server.chat_requests[-1].json()["max_tokens"] == 777

    (repo / ".clover").mkdir()
    (repo / ".clover/config.toml").write_text("max_tokens = 555\n")
    scripted_server.enqueue(sglang(lambda s: s.content("Three.")))
    code, _out, err = await run_clover(
        repo, "--task", "x", "--base-url", scripted_server.base_url, *HOST, home=tmp_path
    )
    assert code == 0, err
    assert scripted_server.chat_requests[-1].json()["max_tokens"] == 555

    scripted_server.enqueue(sglang(lambda s: s.content("Four.")))
    code, _out, err = await run_clover(
        repo,
        "--task",
        "x",
        "--base-url",
        scripted_server.base_url,
        "--max-tokens",
        "333",
        *HOST,
        home=tmp_path,
    )
    assert code == 0, err
    assert scripted_server.chat_requests[-1].json()["max_tokens"] == 333


# ---------------------------------------------------------------- --timeout


async def test_timeout_ends_a_stalled_stream_with_exit_4_and_the_partial_text(
    scripted_server: ScriptedServer, repo: Path, tmp_path: Path
) -> None:
    stream = SGLangStream().content("Started the answer. ", "More of it. ")
    scripted_server.enqueue(held(stream, 2))
    code, out, err = await run_clover(
        repo,
        "--task",
        "x",
        "--base-url",
        scripted_server.base_url,
        *HOST,
        "--timeout",
        LIMIT,
        "--output-format",
        "json",
        home=tmp_path,
    )
    assert code == 4, err
    result = one_result(out)
    assert (result.status, result.exit_code) == ("limit", 4)
    # Trailing whitespace may still wait in the decoder for what follows it.
    assert result.result.rstrip() == "Started the answer."
    assert result.error is not None and f"time limit of {LIMIT} s" in result.error
    assert await scripted_server.wait_for_disconnect()


async def test_timeout_bounds_a_server_that_never_lists_its_models(
    scripted_server: ScriptedServer, repo: Path, tmp_path: Path
) -> None:
    scripted_server.enqueue(ScriptedResponse(steps=[Hold()]), path=MODELS_PATH)
    code, out, err = await run_clover(
        repo,
        "--task",
        "x",
        "--base-url",
        scripted_server.base_url,
        *HOST,
        "--timeout",
        "2",
        "--output-format",
        "json",
        home=tmp_path,
    )
    assert code == 4, err
    result = one_result(out)
    assert result.status == "limit" and result.session_id is None
    assert result.error is not None and "before the session was ready" in result.error
    assert problems(err)[0].startswith("clover-code: ") and len(problems(err)) == 1


async def test_timeout_ends_a_hung_tool_call_and_its_process(
    scripted_server: ScriptedServer, repo: Path, tmp_path: Path, headless_argv: tuple[str, ...]
) -> None:
    scripted_server.enqueue(
        sglang(lambda s: s.tool_call("shell", {"command": "echo $$ > shell.pid; sleep 300"}))
    )
    code, out, err = await run_clover(
        repo,
        "--task",
        "x",
        *headless_argv,
        "--timeout",
        LIMIT,
        "--output-format",
        "json",
        home=tmp_path,
    )
    assert code == 4, err
    assert one_result(out).status == "limit"
    pid = int((repo / "shell.pid").read_text())
    deadline = time.monotonic() + 30
    while _alive(pid):
        assert time.monotonic() < deadline, f"the shell {pid} outlived the run"
        await asyncio.sleep(0.1)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


# ------------------------------------------------------------ the JSON result


async def test_json_result_has_one_shape_for_every_ending(
    scripted_server: ScriptedServer, repo: Path, tmp_path: Path, closed_port_url: str
) -> None:
    base = ("--task", "x", "--output-format", "json", *HOST)
    url = ("--base-url", scripted_server.base_url)
    results: dict[str, TaskResult] = {}

    scripted_server.enqueue(sglang(lambda s: s.content("All done.")))
    code, out, err = await run_clover(repo, *base, *url, home=tmp_path)
    assert code == 0, err
    results["success"] = one_result(out)

    scripted_server.enqueue(error_response(400, "bad request shape"))
    code, out, err = await run_clover(repo, *base, *url, home=tmp_path)
    assert code == 1, err
    results["error"] = one_result(out)

    code, out, err = await run_clover(repo, *base, "--base-url", closed_port_url, home=tmp_path)
    assert code == 3, err
    results["no engine"] = one_result(out)

    scripted_server.enqueue(
        sglang(lambda s: (s.content("Looking. "), s.tool_call("list_files", {"path": "."})))
    )
    code, out, err = await run_clover(repo, *base, *url, "--max-turns", "1", home=tmp_path)
    assert code == 4, err
    results["limit"] = one_result(out)

    success, error, no_engine, limit = results.values()
    assert (success.status, success.exit_code, success.error) == ("success", 0, None)
    assert success.result == "All done." and success.turns == 1
    assert success.session_id and success.transcript and success.version
    assert success.usage.completion_tokens > 0 and success.duration_s > 0
    assert (error.status, error.exit_code) == ("error", 1)
    assert error.error is not None and "bad request shape" in error.error
    assert (no_engine.status, no_engine.exit_code, no_engine.session_id) == ("error", 3, None)
    assert no_engine.error is not None and "cannot reach the model server" in no_engine.error
    assert (limit.status, limit.exit_code, limit.turns, limit.tool_calls) == ("limit", 4, 1, 1)
    assert limit.result.rstrip() == "Looking."
    assert limit.error is not None and "--max-turns 1" in limit.error
    for result in results.values():
        assert set(result.model_dump()) == RESULT_KEYS


async def test_interrupt_ends_stream_json_with_the_result_and_the_partial_text(
    scripted_server: ScriptedServer, repo: Path, tmp_path: Path
) -> None:
    stream = SGLangStream().content("Partial answer, first block. ", "Second block. ", "Third. ")
    scripted_server.enqueue(held(stream, 3))
    proc = await clover(
        repo,
        "--task",
        "explain",
        "--base-url",
        scripted_server.base_url,
        *HOST,
        "--output-format",
        "stream-json",
        home=tmp_path,
    )
    assert proc.stdout is not None
    seen: list[str] = []
    while not any("Second block." in line for line in seen):
        line = await asyncio.wait_for(proc.stdout.readline(), 30)
        assert line, "the stream ended before the text arrived"
        seen.append(line.decode())
    proc.send_signal(signal.SIGINT)
    rest, err = await asyncio.wait_for(proc.communicate(), 30)
    assert proc.returncode == 130, err
    lines = stream_lines("".join(seen) + rest.decode())
    result = lines[-1]
    assert isinstance(result, TaskResult)
    assert set(json.loads(rest.decode().splitlines()[-1])) == RESULT_KEYS
    assert (result.status, result.exit_code) == ("interrupted", 130)
    assert result.result.rstrip() == "Partial answer, first block. Second block."
    assert result.error is not None and "--resume" in result.error
    assert isinstance(lines[-2], p.SessionEnded)


# ------------------------------------------------------------------ stream-json


async def test_stream_json_sends_each_piece_of_text_once(
    scripted_server: ScriptedServer, repo: Path, tmp_path: Path
) -> None:
    scripted_server.enqueue(
        sglang(
            lambda s: (
                s.reasoning("THINK-MARKER: list the files."),
                s.content("INTRO-MARKER first. "),
                s.tool_call("list_files", {"path": "."}),
            )
        ),
        sglang(lambda s: s.content("ANSWER-MARKER part one, ", "ANSWER-MARKER part two.")),
    )
    code, out, err = await run_clover(
        repo,
        "--task",
        "x",
        "--base-url",
        scripted_server.base_url,
        *HOST,
        "--output-format",
        "stream-json",
        home=tmp_path,
    )
    assert code == 0, err
    lines = out.splitlines()
    events, result = stream_lines(out)[:-1], stream_lines(out)[-1]
    assert isinstance(result, TaskResult) and result.status == "success"
    assert result.result == "ANSWER-MARKER part one, ANSWER-MARKER part two."
    event_text = "\n".join(lines[:-1])
    # Each piece of text in exactly one event; the result line is the summary.
    assert event_text.count("THINK-MARKER") == 1
    assert event_text.count("INTRO-MARKER") == 1
    assert event_text.count("ANSWER-MARKER part one") == 1
    assert event_text.count("ANSWER-MARKER part two") == 1
    deltas = "".join(e.text for e in events if isinstance(e, p.ContentDelta))
    assert deltas == "INTRO-MARKER first." + result.result
    blocks = [json.loads(line) for line in lines if '"type":"block_committed"' in line]
    assert blocks and all("text" not in b and b["token_count"] > 0 for b in blocks)
    finished = [json.loads(line) for line in lines if '"type":"turn_finished"' in line]
    assert len(finished) == 1 and "final_text" not in finished[0]
    assert finished[0]["status"] == "completed"
