"""Context budget: automatic compaction, long outputs saved, overflow reported."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from clover_code import protocol as p
from clover_code.agent import open as factory
from clover_code.agent.transcript import load
from clover_code.agent.turn.context import TokenCounter, estimate_tokens
from clover_code.config.settings import Settings
from tests.fakes import ScriptedBackend, text_response, tool_response
from tests.sessions import open_session
from tests.unit.agent.turn.test_agent_loop import assert_valid_conversation, of_type
from tests.waiting import async_wait_until

SMALL = {"context_window": 12_000, "response_reserve": 1000, "compact_threshold": 0.5}
FIRST_TASK = "Rename every helper to snake_case and NEVER touch vendor/."


def big_reads(n: int) -> list[list[Any]]:
    return [tool_response(("read_file", {"path": "big.py"})) for _ in range(n)]


async def test_instructions_survive_three_compactions(
    make_settings: Callable[..., Settings], repo: Path
) -> None:
    (repo / "AGENTS.md").write_text("House rule: run `make lint` before finishing.\n")
    (repo / "big.py").write_text("".join(f"value_{i} = {i}  # filler line\n" for i in range(120)))
    events: list[p.Event] = []
    todo = [{"text": "rename helpers", "status": "in_progress"}, {"text": "run make lint"}]
    script = [tool_response(("todo", {"items": todo})), *big_reads(12), text_response("All ok.")]
    backend = ScriptedBackend(script, summary="## Goal\nrename helpers")
    session = await open_session(make_settings(**SMALL), backend, repo, events)
    finished = await session.run_turn(FIRST_TASK)
    await session.close()
    assert finished.status == "completed", of_type(events, p.ErrorEvent)
    compactions = of_type(events, p.Compacted)
    assert len(compactions) >= 3
    assert all(c.tokens_after < c.tokens_before for c in compactions)
    for request in backend.requests:
        system = request.messages[0]["content"]
        assert "House rule: run `make lint`" in system
        text = "\n".join(str(m.get("content")) for m in request.messages)
        assert FIRST_TASK in text
    last = backend.requests[-1].messages
    assert f"## Goal\nrename helpers #{len(compactions)}" in last[1]["content"]
    # the todo list survives every compaction, as the model keeps it
    assert '"text": "run make lint"' in last[1]["content"]
    assert [i.text for i in of_type(events, p.TodoUpdated)[0].items] == [
        "rename helpers",
        "run make lint",
    ]
    # each summary request saw the previous summary, so nothing is dropped
    assert "#2" in backend.summary_requests[2].messages[1]["content"]
    history = load(session.transcript.path).messages
    assert_valid_conversation(history)
    assert history[0]["content"].startswith("[The earlier part of this session was compacted.]")
    assert history[-1] == {"role": "assistant", "content": "All ok."}


async def test_manual_compact_op_and_resume_keep_compacted_history(
    make_settings: Callable[..., Settings], repo: Path
) -> None:
    events: list[p.Event] = []
    settings = make_settings()
    # Long enough answers that a summary is smaller than what it replaces.
    long = "a long answer that compaction can shorten. " * 40
    backend = ScriptedBackend(
        [text_response("one " + long), text_response("two " + long), text_response("three")],
        summary="S",
    )
    session = await open_session(settings, backend, repo, events)
    await session.run_turn("first")
    await session.run_turn("second")
    await session.submit(p.Compact())
    await async_wait_until(
        lambda: bool(of_type(events, p.Compacted)), message="the compaction to finish"
    )
    await session.close()
    loaded = load(session.transcript.path).messages
    assert loaded[0]["content"].startswith("[The earlier part")
    assert "first" in loaded[0]["content"]  # the first request, verbatim

    backend2 = ScriptedBackend([text_response("three")])
    session2 = await factory.open_session(
        settings,
        repo,
        factory.SessionOptions(
            emit=events.append, resume=session.transcript.path, backend=backend2
        ),
    )
    await session2.run_turn("third")
    await session2.close()
    sent = backend2.requests[0].messages
    assert sent[1]["content"].startswith("[The earlier part")
    assert sent[-1] == {"role": "user", "content": "third"}


async def test_long_tool_output_is_cut_and_readable_in_parts(
    make_settings: Callable[..., Settings], repo: Path
) -> None:
    lines = "".join(f"line {i:05d} of the log\n" for i in range(3000))
    (repo / "log.txt").write_text(lines)
    events: list[p.Event] = []
    backend = ScriptedBackend(
        [
            tool_response(("read_file", {"path": "log.txt", "limit": 2000})),
            [],  # placeholder, replaced below once the id is known
            text_response("read it"),
        ]
    )
    session = await open_session(make_settings(output_limit=2000), backend, repo, events)
    backend.responses[1] = tool_response(("read_output", {"id": "?", "offset": 1500, "limit": 3}))
    original = session.agent.dispatch.run_call

    async def patch_ids(call: Any, turn: Any, slot: Any = None) -> None:
        if call.name == "read_output":
            call.arguments["id"] = of_type(events, p.ToolCallStarted)[0].call_id
        await original(call, turn, slot)

    session.agent.dispatch.run_call = patch_ids  # type: ignore[method-assign]
    await session.run_turn("read the log")
    await session.close()
    seen = next(m for m in backend.requests[1].messages if m["role"] == "tool")["content"]
    assert len(seen) < 2600 and " omitted ...]" in seen
    assert "read it in parts with read_output" in seen
    part = [m for m in backend.requests[2].messages if m["role"] == "tool"][-1]["content"]
    assert "line 01499 of the log" in part and "line 01502" not in part


async def test_overflow_with_nothing_to_summarise_is_one_clear_error(
    make_settings: Callable[..., Settings], repo: Path
) -> None:
    events: list[p.Event] = []
    backend = ScriptedBackend([], summary="S")
    session = await open_session(make_settings(**SMALL), backend, repo, events)
    finished = await session.run_turn("x" * 20_000)
    await session.close()
    assert finished.status == "failed"
    (error,) = of_type(events, p.ErrorEvent)
    assert "does not fit the context window" in error.message


def test_counter_prefers_the_servers_count() -> None:
    counter = TokenCounter()
    messages = [{"role": "user", "content": "hello " * 100}]
    estimate = counter.prompt("system", messages, [])
    counter.reported(5000, 1)
    assert counter.prompt("system", messages, []) == 5000
    messages.append({"role": "assistant", "content": "ok"})
    assert counter.prompt("system", messages, []) == 5000 + counter.messages(messages[1:])
    assert estimate_tokens("abcd" * 10) >= 10
    counter.reset()
    assert counter.prompt("system", messages[:1], []) == estimate


async def test_small_windows_leave_room_for_the_prompt(
    make_settings: Callable[..., Settings], repo: Path
) -> None:
    for window in (8_192, 16_384, 32_768):
        events: list[p.Event] = []
        backend = ScriptedBackend([text_response("done")], summary="S")
        settings = make_settings(context_window=window)
        session = await open_session(settings, backend, repo, events)
        finished = await session.run_turn("hi")
        await session.close()
        assert finished.status == "completed", (window, of_type(events, p.ErrorEvent))
        assert backend.summary_requests == []  # no summary of a one-word conversation
        assert session.agent.budget.prompt_limit >= window * 3 // 4


async def test_a_request_too_big_for_the_window_asks_for_no_summary(
    make_settings: Callable[..., Settings], repo: Path
) -> None:
    events: list[p.Event] = []
    backend = ScriptedBackend([], summary="S")
    session = await open_session(make_settings(**SMALL), backend, repo, events)
    finished = await session.run_turn("word " * 30_000)
    await session.close()
    assert finished.status == "failed" and backend.summary_requests == []


async def test_compaction_never_grows_and_cuts_an_oversized_tool_result(
    make_settings: Callable[..., Settings], repo: Path
) -> None:
    # One tool result near the window's size, after some earlier work: the
    # compacted conversation must be smaller, with the result cut to fit.
    (repo / "small.py").write_text("x = 1\n")
    (repo / "huge.txt").write_text("".join(f"row {i:06d} of data\n" for i in range(4000)))
    events: list[p.Event] = []
    script = [
        tool_response(("read_file", {"path": "small.py"})),
        tool_response(("read_file", {"path": "huge.txt", "limit": 4000})),
        text_response("read both"),
    ]
    backend = ScriptedBackend(script, summary="S")
    settings = make_settings(**SMALL, output_limit=200_000)
    session = await open_session(settings, backend, repo, events)
    await session.run_turn("read the files")
    await session.close()
    compactions = of_type(events, p.Compacted)
    assert compactions, of_type(events, p.ErrorEvent)
    assert all(c.tokens_after < c.tokens_before for c in compactions)
    last = backend.requests[-1].messages
    tool = [m for m in last if m["role"] == "tool"][-1]["content"]
    assert "characters cut so the conversation fits the context window" in tool
    assert "row 000000 of data" in tool and "[showing lines 1-2000 of 4000" in tool
    assert_valid_conversation(last[1:])
