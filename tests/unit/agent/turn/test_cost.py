"""What requests cost and the session's budget: priced responses, cached prompt tokens,
children and compaction charged to one budget, the turn ended before the next request."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from clover_code import protocol as p
from clover_code.config.load import load_settings
from clover_code.config.sections import ModelPrice
from clover_code.config.settings import Settings
from clover_code.engine import events as ev
from clover_code.errors import ConfigError
from clover_code.protocol.cost import CostTally, money
from tests.fakes import ScriptedBackend, text_response, tool_response
from tests.sessions import open_session
from tests.waiting import async_wait_until, within

PRICE = {"input": 2.0, "cached_input": 0.5, "output": 8.0}
"""Per million tokens: a million-token prompt costs $2, a million cached ones $0.50."""
DOLLAR_A_TOKEN = {"input": 1_000_000, "output": 0}
"""A prompt token costs $1 (so that small scripted prompts reach a budget)."""


def billed(response: list[Any], prompt: int, completion: int, cached: int = 0) -> list[Any]:
    """``response`` with the usage a server would report for it."""
    kept = [e for e in response if not isinstance(e, ev.Usage)]
    return [*kept[:-1], ev.Usage(prompt, completion, cached_tokens=cached), kept[-1]]


def usage_costs(events: list[p.Event]) -> list[float | None]:
    return [e.cost for e in events if isinstance(e, p.UsageReport)]


def test_a_price_counts_cached_prompt_tokens_apart() -> None:
    price = ModelPrice.model_validate(PRICE)
    assert price.cost(1_000_000, 0, 0) == 2.0
    assert price.cost(1_000_000, 400_000, 100_000) == pytest.approx(1.2 + 0.2 + 0.8)
    # Without a cached price the cache is priced as input; a bad count is clamped.
    plain = ModelPrice(input=2.0, output=8.0)
    assert plain.cost(1_000_000, 400_000, 0) == 2.0
    assert price.cost(100, 5_000, 0) == pytest.approx(100 * 0.5 / 1e6)


def test_money_shows_cents_and_less() -> None:
    assert (money(0), money(0.042), money(12.5), money(0.0031)) == (
        "$0.00",
        "$0.04",
        "$12.50",
        "$0.0031",
    )
    tally = CostTally()
    tally.see(p.UsageReport(prompt_tokens=1, completion_tokens=1, context_window=9, cost=0.5))
    child = p.UsageReport(prompt_tokens=1, completion_tokens=1, context_window=9, cost=0.25)
    tally.see(p.SubagentEvent(parent_call_id="c", agent="explore", event=child))
    assert tally.total == 0.75
    tally.see(p.Compacted(summary="s", tokens_before=2, tokens_after=1, cost=None))
    assert tally.total is None and tally.shown() == "unknown"


async def test_each_response_is_priced_and_cached_tokens_cost_less(
    make_settings: Callable[..., Settings], repo: Path
) -> None:
    backend = ScriptedBackend(
        [
            billed(tool_response(("read_file", {"path": "app.py"})), 10_000, 500),
            billed(text_response("done"), 12_000, 200, cached=10_000),
        ],
        model="priced-model",
    )
    events: list[p.Event] = []
    settings = make_settings(pricing={"priced-model": PRICE})
    session = await open_session(settings, backend, repo, events)
    await session.run_turn("read it")
    await session.close()
    first = (10_000 * 2.0 + 500 * 8.0) / 1e6
    second = (2_000 * 2.0 + 10_000 * 0.5 + 200 * 8.0) / 1e6
    assert usage_costs(events) == [pytest.approx(first), pytest.approx(second)]
    reports = [e for e in events if isinstance(e, p.UsageReport)]
    assert [r.cached_tokens for r in reports] == [0, 10_000]
    assert session.agent.spend.total == pytest.approx(first + second)


async def test_a_local_engine_costs_nothing_and_an_unpriced_model_is_unknown(
    make_settings: Callable[..., Settings], repo: Path
) -> None:
    local = ScriptedBackend([billed(text_response("hi"), 100, 10)])
    local.name = "hf"
    events: list[p.Event] = []
    session = await open_session(make_settings(), local, repo, events)
    await session.run_turn("hi")
    await session.close()
    assert usage_costs(events) == [0.0]

    remote = ScriptedBackend([billed(text_response("hi"), 100, 10)])
    events = []
    session = await open_session(make_settings(), remote, repo, events)
    await session.run_turn("hi")
    await session.close()
    assert usage_costs(events) == [None]


async def test_the_budget_ends_the_turn_before_the_next_request(
    make_settings: Callable[..., Settings], repo: Path
) -> None:
    # Each tool round costs $2.00; the budget is $3.
    backend = ScriptedBackend(
        [
            billed(tool_response(("read_file", {"path": "app.py"})), 2, 0),
            billed(tool_response(("read_file", {"path": "app.py"})), 2, 0),
            billed(text_response("never asked for"), 2, 0),
        ],
        model="priced-model",
    )
    events: list[p.Event] = []
    settings = make_settings(pricing={"priced-model": DOLLAR_A_TOKEN}, max_cost=3.0)
    session = await open_session(settings, backend, repo, events)
    finished = await session.run_turn("go")
    assert finished.status == "max_cost" and finished.model_requests == 2
    assert len(backend.requests) == 2
    (error,) = [e for e in events if isinstance(e, p.ErrorEvent)]
    assert error.message == (
        "stopped after spending $4.00, the budget of $3.00 (--max-cost); raise it to go further."
    )
    # The next turn is refused at once: the budget is the session's.
    again = await session.run_turn("more")
    await session.close()
    assert again.status == "max_cost" and len(backend.requests) == 2


async def test_children_spend_the_sessions_budget(
    make_settings: Callable[..., Settings], repo: Path
) -> None:
    task = ("task", {"description": "look", "prompt": "look", "agent": "general"})
    backend = ScriptedBackend(
        [
            billed(tool_response(task), 1, 0),
            billed(tool_response(("read_file", {"path": "app.py"})), 2, 0),
            billed(text_response("child never gets this"), 1, 0),
            billed(text_response("nor the parent"), 1, 0),
        ],
        model="priced-model",
    )
    events: list[p.Event] = []
    settings = make_settings(pricing={"priced-model": DOLLAR_A_TOKEN}, max_cost=2.5)
    session = await open_session(settings, backend, repo, events)
    finished = await session.run_turn("go")
    await session.close()
    # The child's first request crossed the budget: its next one and the parent's are not sent.
    assert len(backend.requests) == 2
    assert finished.status == "max_cost"
    (task_done,) = [e for e in events if isinstance(e, p.ToolCallFinished) and e.name == "task"]
    assert isinstance(task_done.display, p.SubagentRun)
    assert task_done.display.status == "max_cost"
    assert task_done.display.cost == pytest.approx(2.0)
    assert "cost budget (max_cost)" in task_done.result


async def test_a_summary_is_charged_too(make_settings: Callable[..., Settings], repo: Path) -> None:
    long = "an answer long enough that a summary is shorter. " * 20
    backend = ScriptedBackend(
        [billed(text_response(long), 1_000, 100), billed(text_response(long), 1_000, 100)],
        model="priced-model",
        summary="S",
    )
    events: list[p.Event] = []
    settings = make_settings(pricing={"priced-model": {"input": 0, "output": 1_000_000}})
    session = await open_session(settings, backend, repo, events)
    await session.run_turn("first")
    await session.run_turn("second")
    await session.agent.compact()
    await session.close()
    (compacted,) = [e for e in events if isinstance(e, p.Compacted)]
    summary_tokens = sum(
        e.completion_tokens for e in text_response("S #1") if isinstance(e, ev.Usage)
    )
    assert compacted.cost == pytest.approx(summary_tokens)
    assert session.agent.spend.total == pytest.approx(200 + summary_tokens)


async def test_a_budget_needs_a_price_for_the_model(
    make_settings: Callable[..., Settings], repo: Path
) -> None:
    backend = ScriptedBackend([text_response("hi")], model="mystery-model")
    with pytest.raises(ConfigError, match=r'add \[pricing."mystery-model"\]'):
        await open_session(make_settings(max_cost=1.0), backend, repo, [])
    assert backend.requests == []


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ('input = "cheap"\noutput = 1', "bad value 'cheap' for 'pricing.m1.input'"),
        ("input = 1", "bad value {'input': 1} for 'pricing.m1.output': Field required"),
        ("input = 1\noutput = 2\nouput = 3", "unknown key 'pricing.m1.ouput'"),
        ("input = -1\noutput = 2", "bad value -1 for 'pricing.m1.input'"),
    ],
)
def test_a_bad_price_names_the_key(tmp_path: Path, table: str, message: str) -> None:
    user = tmp_path / "config.toml"
    user.write_text(f'[pricing."m1"]\n{table}\n')
    with pytest.raises(ConfigError) as info:
        load_settings({}, user_config=user, env={})
    assert f"config file {user}: {message}" in str(info.value)


async def test_an_interrupted_response_is_charged_for_what_it_used(
    make_settings: Callable[..., Settings], repo: Path
) -> None:
    hang = asyncio.Event()
    block = ev.BlockCommitted(block=0, text="Half an answer", token_count=32)
    backend = ScriptedBackend([[ev.ContentDelta("Half an answer"), block, hang]], model="m")
    events: list[p.Event] = []
    settings = make_settings(pricing={"m": {"input": 0, "output": 1_000_000}})
    session = await open_session(settings, backend, repo, events)
    turn = asyncio.create_task(session.run_turn("go"))
    await async_wait_until(
        lambda: any(isinstance(e, p.BlockCommitted) for e in events), message="the first block"
    )
    await session.submit(p.Interrupt())
    finished = await within(turn, message="the interrupted turn to end")
    await session.close()
    assert finished.status == "interrupted"
    assert usage_costs(events) == [pytest.approx(32.0)]
    assert session.agent.spend.total == pytest.approx(32.0)
