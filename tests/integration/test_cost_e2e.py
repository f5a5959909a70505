"""Cost and the budget end to end: the real `clover-code` command against a scripted
OpenAI-compatible server (usage with cached prompt tokens), the ACP agent, and a real
llama-cpp-python server whose own token counts are priced."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest
from acp import text_block

from clover_code import protocol as p
from clover_code.outcome.result import TaskResult, parse_stream_line
from tests.integration.llama_peer import LlamaServer
from tests.integration.sse_server import ScriptedResponse, ScriptedServer, sse_response
from tests.integration.stream_shapes import SGLangStream
from tests.integration.test_acp_harness import EditorClient, spawn_acp
from tests.integration.test_headless_e2e import run_clover

pytestmark = pytest.mark.integration

PRICING = '[pricing."test-model"]\ninput = 1000.0\ncached_input = 100.0\noutput = 2000.0\n'
"""Per million tokens; large, so that a few scripted tokens cost a few cents."""


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    (root / "notes.txt").write_text("hello\n")
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    return root


@pytest.fixture
def home(tmp_path: Path) -> Path:
    home = tmp_path / "home"
    (home / "config" / "clover-code").mkdir(parents=True)
    (home / "config" / "clover-code" / "config.toml").write_text(PRICING)
    return home


def cached(stream: SGLangStream, tokens: int) -> ScriptedResponse:
    """``stream``'s response with usage saying ``tokens`` prompt tokens came from the
    server's cache (OpenAI's prompt_tokens_details)."""
    chunks: list[dict[str, Any]] = stream.chunks()
    for chunk in chunks:
        if "usage" in chunk:
            chunk["usage"]["prompt_tokens_details"] = {"cached_tokens": tokens}
    return sse_response(chunks)


def cost_of(prompt: int, cached_tokens: int, completion: int) -> float:
    return ((prompt - cached_tokens) * 1000.0 + cached_tokens * 100.0 + completion * 2000.0) / 1e6


def lines(out: str) -> tuple[list[p.Event], TaskResult]:
    *events, result = [parse_stream_line(line) for line in out.splitlines()]
    assert isinstance(result, TaskResult)
    return events, result


ARGS = ("--sandbox", "none", "--approval", "full-auto", "--output-format", "stream-json")


async def test_usage_events_and_the_result_carry_the_cost(
    scripted_server: ScriptedServer, repo: Path, home: Path
) -> None:
    task = {"description": "look", "prompt": "read notes.txt", "agent": "explore"}
    parent = SGLangStream(prompt_tokens=200)
    parent.tool_call("task", task)
    child = SGLangStream(prompt_tokens=120)
    child.content("It says hello.")
    answer = SGLangStream(prompt_tokens=300)
    answer.content("Done.")
    scripted_server.enqueue(cached(parent, 0), cached(child, 100), cached(answer, 256))
    code, out, err = await run_clover(
        repo, "--task", "look", "--base-url", scripted_server.base_url, *ARGS, home=home
    )
    assert code == 0, err
    events, result = lines(out)
    reports = [e for e in events if isinstance(e, p.UsageReport)]
    assert [(r.cached_tokens, r.cost) for r in reports] == [
        (0, pytest.approx(cost_of(200, 0, parent.completion_tokens))),
        (256, pytest.approx(cost_of(300, 256, answer.completion_tokens))),
    ]
    child_cost = cost_of(120, 100, child.completion_tokens)
    (wrapped,) = [
        e.event
        for e in events
        if isinstance(e, p.SubagentEvent) and isinstance(e.event, p.UsageReport)
    ]
    assert isinstance(wrapped, p.UsageReport)
    assert (wrapped.cached_tokens, wrapped.cost) == (100, pytest.approx(child_cost))
    total = sum(r.cost or 0 for r in reports) + child_cost
    assert result.usage.cost == pytest.approx(total)
    assert result.usage.cached_tokens == 256
    (sub,) = result.subagents
    assert sub.agent == "explore" and sub.cost == pytest.approx(child_cost)


async def test_max_cost_ends_the_run_as_a_limit(
    scripted_server: ScriptedServer, repo: Path, home: Path
) -> None:
    def round_trip() -> ScriptedResponse:
        stream = SGLangStream(prompt_tokens=1000)
        stream.tool_call("read_file", {"path": "notes.txt"})
        return cached(stream, 0)

    scripted_server.enqueue(round_trip(), round_trip(), round_trip())
    budget = 1.5  # each round costs more than $1 (the prompt alone): the second crosses it
    code, out, err = await run_clover(
        repo,
        "--task",
        "read it again and again",
        "--base-url",
        scripted_server.base_url,
        "--max-cost",
        str(budget),
        *ARGS,
        home=home,
    )
    _events, result = lines(out)
    assert code == 4, err
    assert (result.status, result.exit_code, result.exit_reason) == ("limit", 4, "max_cost")
    assert len(scripted_server.chat_requests) == 2 and result.turns == 2
    assert result.usage.cost is not None and result.usage.cost >= budget
    assert result.error is not None and "(--max-cost)" in result.error
    assert result.error.startswith("stopped after spending $")


async def test_a_budget_without_a_price_is_refused_at_start(
    scripted_server: ScriptedServer, repo: Path, tmp_path: Path
) -> None:
    home = tmp_path / "unpriced-home"
    (home / "config" / "clover-code").mkdir(parents=True)
    code, out, err = await run_clover(
        repo,
        "--task",
        "hi",
        "--base-url",
        scripted_server.base_url,
        "--max-cost",
        "2",
        *ARGS,
        home=home,
    )
    assert code == 2
    _events, result = lines(out)
    assert result.exit_reason == "usage_error"
    assert result.error is not None and 'add [pricing."test-model"]' in result.error
    assert scripted_server.chat_requests == []
    assert "Traceback" not in err


async def test_acp_usage_updates_carry_the_sessions_cost(
    scripted_server: ScriptedServer, repo: Path, home: Path
) -> None:
    first = SGLangStream(prompt_tokens=400)
    first.tool_call("read_file", {"path": "notes.txt"})
    second = SGLangStream(prompt_tokens=500)
    second.content("It says hello.")
    scripted_server.enqueue(cached(first, 0), cached(second, 400))
    client = EditorClient()
    args = ("--base-url", scripted_server.base_url, "--sandbox", "none")
    async with spawn_acp(client, repo, home, *args) as (conn, _proc):
        await conn.initialize(protocol_version=1)
        new = await conn.new_session(cwd=str(repo), mcp_servers=[])
        done = await conn.prompt(session_id=new.session_id, prompt=[text_block("read it")])
        assert done.stop_reason == "end_turn"
    usage = [u for u in client.updates if u.session_update == "usage_update"]
    amounts = [u.cost.amount for u in usage if u.cost is not None]
    one = cost_of(400, 0, first.completion_tokens)
    two = cost_of(500, 400, second.completion_tokens)
    assert amounts == [pytest.approx(one), pytest.approx(one + two)]
    assert {u.cost.currency for u in usage if u.cost is not None} == {"USD"}


@pytest.mark.slow
def test_real_server_token_counts_are_priced_and_budgeted(
    llama_server: LlamaServer, tmp_path: Path
) -> None:
    models = httpx.get(f"{llama_server.base_url}/models", timeout=30).json()["data"]
    model = models[0]["id"]
    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    config = tmp_path / "config" / "clover-code"
    config.mkdir(parents=True)
    # $1 per prompt token: the first request's prompt alone spends the whole budget. A
    # Stop hook asks for more once, so a second request is always wanted.
    again = tmp_path / "again.py"
    again.write_text(
        "import json, sys\nif not json.load(sys.stdin)['stop_hook_active']:\n"
        "    print('say it once more', file=sys.stderr)\n    sys.exit(2)\n"
    )
    config.joinpath("config.toml").write_text(
        f"[pricing.{json.dumps(model)}]\ninput = 1000000.0\noutput = 2000000.0\n"
        f"[[hooks.Stop]]\ncommand = {json.dumps(f'{sys.executable} {again}')}\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("CLOVER_")}
    env.update(XDG_DATA_HOME=str(tmp_path / "data"), XDG_CONFIG_HOME=str(tmp_path / "config"))
    env["CLOVER_MAX_TOKENS"] = "24"  # a small model on two CPU cores: keep it short
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "clover_code",
            "--task",
            "Reply with one short sentence greeting the user.",
            "--base-url",
            llama_server.base_url,
            "--max-cost",
            "5",
            "--output-format",
            "stream-json",
        ],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )
    events, result = lines(done.stdout)
    (report,) = [e for e in events if isinstance(e, p.UsageReport)]
    # The server's own counts, priced: a prompt of that many tokens costs that many dollars.
    assert report.prompt_tokens > 5
    expected = report.prompt_tokens * 1.0 + report.completion_tokens * 2.0
    assert report.cost == pytest.approx(expected)
    # Whether it answered (the Stop hook wants more) or called a tool, the next request
    # was not sent.
    assert (done.returncode, result.exit_reason) == (4, "max_cost"), done.stderr
    assert result.turns == 1 and result.usage.cost == pytest.approx(expected)
