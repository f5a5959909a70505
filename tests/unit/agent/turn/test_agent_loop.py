"""The turn loop against a scripted backend, with the real tools and transcript."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from clover_code import protocol as p
from clover_code.agent import open as factory
from clover_code.agent.transcript import load
from clover_code.config.settings import Settings
from clover_code.engine import events as ev
from clover_code.errors import StreamInterrupted
from tests.fakes import ScriptedBackend, text_response, tool_response
from tests.sessions import open_session
from tests.waiting import async_wait_until, within


def of_type(events: list[p.Event], kind: type) -> list[Any]:
    return [e for e in events if isinstance(e, kind)]


def assert_valid_conversation(messages: list[dict[str, Any]]) -> None:
    """Every assistant tool call is answered by a tool message, in order."""
    pending: list[str] = []
    for message in messages:
        if message["role"] == "tool":
            assert pending and message["tool_call_id"] == pending.pop(0)
        else:
            assert not pending, f"unanswered tool calls {pending}"
            pending = [c["id"] for c in message.get("tool_calls", [])]
    assert not pending


async def test_resume_from_another_directory_says_so(
    make_settings: Callable[..., Settings], repo: Path, tmp_path: Path
) -> None:
    settings = make_settings()
    first = await open_session(settings, ScriptedBackend([text_response("hi")]), repo, [])
    await first.run_turn("hello")
    await first.close()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    events: list[p.Event] = []
    backend = ScriptedBackend([text_response("again")])
    second = await open_session(settings, backend, elsewhere, events, resume=first.transcript.path)
    await second.close()
    texts = [n.text for n in of_type(events, p.Notice)]
    assert f"session {first.id} began in {repo}; it continues here, in {elsewhere}." in texts
    same: list[p.Event] = []
    third = await open_session(settings, backend, repo, same, resume=first.transcript.path)
    await third.close()
    assert not any("began in" in n.text for n in of_type(same, p.Notice))


async def test_text_answer_streams_blocks_and_is_recorded(
    make_settings: Callable[..., Settings], repo: Path
) -> None:
    events: list[p.Event] = []
    backend = ScriptedBackend([text_response("All good.", reasoning="Let me think.")])
    session = await open_session(make_settings(), backend, repo, events)
    finished = await session.run_turn("hello")
    await session.close()
    assert finished.status == "completed"
    assert finished.final_text == "All good."
    assert isinstance(events[0], p.SessionStarted)
    assert "".join(e.text for e in of_type(events, p.BlockCommitted)) == "Let me think.All good."
    assert [e.block for e in of_type(events, p.BlockCommitted)] == [0, 1]
    loaded = load(session.transcript.path)
    assert [m["role"] for m in loaded.messages] == ["user", "assistant"]
    assert loaded.messages[1]["reasoning_content"] == "Let me think."
    # reasoning is not sent back to the model
    assert backend.requests[0].messages[0]["role"] == "system"
    assert isinstance(events[-1], p.SessionEnded) and backend.closed


async def test_usage_reports_tokens_per_denoising_forward(
    make_settings: Callable[..., Settings], repo: Path
) -> None:
    blocks = [
        ev.ContentDelta("Half a block, "),
        ev.BlockCommitted(0, "Half a block, ", 32, steps=4),
        ev.ContentDelta("then more."),
        ev.BlockCommitted(1, "then more.", 16, steps=4),
        ev.Usage(100, 48),
        ev.Finished("stop"),
    ]
    events: list[p.Event] = []
    backend = ScriptedBackend([blocks, text_response("No steps here.")])
    session = await open_session(make_settings(), backend, repo, events)
    await session.run_turn("hello")
    await session.run_turn("again")
    await session.close()
    first, second = of_type(events, p.UsageReport)
    assert first.tokens_per_forward == 6.0  # 48 tokens over 8 denoising steps
    assert second.tokens_per_forward is None  # an autoregressive-shaped stream


async def test_read_edit_and_answer(make_settings: Callable[..., Settings], repo: Path) -> None:
    events: list[p.Event] = []
    backend = ScriptedBackend(
        [
            tool_response(("read_file", {"path": "app.py"})),
            tool_response(
                (
                    "edit_file",
                    {"path": "app.py", "old_string": "a - b", "new_string": "a + b"},
                )
            ),
            text_response("Fixed the sign."),
        ]
    )
    session = await open_session(make_settings(), backend, repo, events)
    finished = await session.run_turn("fix add")
    await session.close()
    assert finished.status == "completed" and finished.model_requests == 3
    assert (repo / "app.py").read_text() == "def add(a, b):\n    return a + b\n"
    results = of_type(events, p.ToolCallFinished)
    assert [r.status for r in results] == ["ok", "ok"]
    assert "return a - b" in results[0].result
    assert "+    return a + b" in results[1].display.diff
    # the model saw the file content in the next request
    second = backend.requests[1].messages
    assert second[-1]["role"] == "tool" and "return a - b" in second[-1]["content"]
    assert_valid_conversation(load(session.transcript.path).messages)


async def test_unknown_tool_and_bad_arguments_go_back_to_the_model(
    make_settings: Callable[..., Settings], repo: Path
) -> None:
    events: list[p.Event] = []
    backend = ScriptedBackend(
        [
            tool_response(("delete_everything", {})),
            tool_response(("read_file", {"path": "app.py", "offset": "first"})),
            tool_response(("read_file", {"path": "app.py"})),
            text_response("done"),
        ]
    )
    session = await open_session(make_settings(), backend, repo, events)
    finished = await session.run_turn("go")
    await session.close()
    assert finished.status == "completed"
    results = of_type(events, p.ToolCallFinished)
    assert results[0].status == "error"
    assert "unknown tool 'delete_everything'" in results[0].result
    assert "read_file" in results[0].result
    assert results[1].status == "error"
    assert "invalid arguments for tool 'read_file'" in results[1].result
    assert "'offset'" in results[1].result and "JSON schema" in results[1].result
    assert results[2].status == "ok"


async def test_parser_error_becomes_a_tool_error(
    make_settings: Callable[..., Settings], repo: Path
) -> None:
    events: list[p.Event] = []
    bad = [
        ev.ToolCallEnd(0, "c1", "read_file", {}, error="arguments are not valid JSON"),
        ev.Finished("tool_calls"),
    ]
    backend = ScriptedBackend([bad, text_response("ok")])
    session = await open_session(make_settings(), backend, repo, events)
    finished = await session.run_turn("go")
    await session.close()
    assert finished.status == "completed"
    (result,) = of_type(events, p.ToolCallFinished)
    assert "not valid JSON" in result.result and "JSON schema" in result.result


async def test_repeated_malformed_calls_stop_the_turn(
    make_settings: Callable[..., Settings], repo: Path
) -> None:
    events: list[p.Event] = []
    backend = ScriptedBackend([tool_response(("nope", {})) for _ in range(3)])
    session = await open_session(make_settings(tool_retries=2), backend, repo, events)
    finished = await session.run_turn("go")
    await session.close()
    assert finished.status == "failed"
    assert "3 malformed tool calls in a row" in of_type(events, p.ErrorEvent)[-1].message
    assert_valid_conversation(load(session.transcript.path).messages)


async def test_parallel_reads_all_answered_in_order(
    make_settings: Callable[..., Settings], repo: Path
) -> None:
    (repo / "b.py").write_text("B = 2\n")
    events: list[p.Event] = []
    backend = ScriptedBackend(
        [
            tool_response(("read_file", {"path": "app.py"}), ("read_file", {"path": "b.py"})),
            text_response("read both"),
        ]
    )
    session = await open_session(make_settings(), backend, repo, events)
    await session.run_turn("go")
    await session.close()
    tool_messages = [m for m in backend.requests[1].messages if m["role"] == "tool"]
    assert "return a - b" in tool_messages[0]["content"]
    assert "B = 2" in tool_messages[1]["content"]


@pytest.mark.parametrize(
    ("mode", "call", "expect"),
    [
        ("auto-edit", ("shell", {"command": "rm -rf /"}), "headless mode cannot ask"),
        ("read-only", ("write_file", {"path": "x.txt", "content": "x"}), "read-only"),
    ],
)
async def test_approval_refusals_are_reported(
    make_settings: Callable[..., Settings],
    repo: Path,
    mode: str,
    call: tuple[str, dict[str, Any]],
    expect: str,
) -> None:
    events: list[p.Event] = []
    backend = ScriptedBackend([tool_response(call), text_response("ok")])
    settings = make_settings(sandbox="none")
    session = await open_session(settings, backend, repo, events, approval_mode=mode)
    await session.run_turn("go")
    await session.close()
    (result,) = of_type(events, p.ToolCallFinished)
    assert result.status == "denied" and expect in result.result
    assert not (repo / "x.txt").exists()


async def test_max_turns(make_settings: Callable[..., Settings], repo: Path) -> None:
    events: list[p.Event] = []
    backend = ScriptedBackend([tool_response(("read_file", {"path": "app.py"}))] * 2)
    session = await open_session(make_settings(max_turns=2), backend, repo, events)
    finished = await session.run_turn("go")
    await session.close()
    assert finished.status == "max_turns"
    assert "--max-turns 2" in of_type(events, p.ErrorEvent)[0].message


async def test_timeout_keeps_partial_text(
    make_settings: Callable[..., Settings], repo: Path
) -> None:
    events: list[p.Event] = []
    hang = asyncio.Event()
    backend = ScriptedBackend([[ev.ContentDelta("Working on"), hang]])
    session = await open_session(make_settings(timeout=0.3), backend, repo, events)
    finished = await session.run_turn("go")
    await session.close()
    assert finished.status == "timeout"
    last = load(session.transcript.path).messages[-1]
    assert last["role"] == "assistant" and last["content"].startswith("Working on")


async def test_interrupt_mid_stream_keeps_transcript_and_resumes(
    make_settings: Callable[..., Settings], repo: Path
) -> None:
    events: list[p.Event] = []
    hang = asyncio.Event()
    settings = make_settings()
    backend = ScriptedBackend([[ev.ContentDelta("Half an ans"), hang]])
    session = await open_session(settings, backend, repo, events)
    turn = asyncio.create_task(session.run_turn("go"))
    await async_wait_until(
        lambda: bool(of_type(events, p.ContentDelta)), message="the first streamed text"
    )
    await session.submit(p.Interrupt())
    finished = await within(turn, message="the interrupted turn to end")
    await session.close()
    assert finished.status == "interrupted"
    path = session.transcript.path
    loaded = load(path)
    assert loaded.messages[-1]["content"] == "Half an ans\n\n[interrupted by the user]"

    # resume: the old messages go to the model with the new task
    events2: list[p.Event] = []
    backend2 = ScriptedBackend([text_response("resumed")])
    session2 = await open_session(settings, backend2, repo, events2, resume=path)
    assert session2.id == session.id
    await session2.run_turn("continue")
    await session2.close()
    sent = backend2.requests[0].messages
    assert [m["role"] for m in sent] == ["system", "user", "assistant", "user"]
    assert [m["role"] for m in load(path).messages] == ["user", "assistant", "user", "assistant"]


async def test_interrupt_during_tool_answers_every_call(
    make_settings: Callable[..., Settings], repo: Path
) -> None:
    events: list[p.Event] = []
    # The first command says when it runs; it would run far longer than the test
    # waits. The second must never start, yet its call is answered too.
    command = "touch started; sleep 600"
    backend = ScriptedBackend(
        [tool_response(("shell", {"command": command}), ("shell", {"command": "touch second"}))]
    )
    session = await open_session(
        make_settings(sandbox="none"), backend, repo, events, approval_mode="full-auto"
    )
    turn = asyncio.create_task(session.run_turn("go"))
    await async_wait_until((repo / "started").exists, message="the shell command to start")
    await session.submit(p.Interrupt())
    finished = await within(turn, message="the turn to end on the interrupt")
    await session.close()
    assert finished.status == "interrupted"
    messages = load(session.transcript.path).messages
    assert_valid_conversation(messages)
    answers = [m for m in messages if m["role"] == "tool"]
    assert len(answers) == 2
    assert all(m["content"].startswith("cancelled") for m in answers), answers
    assert not (repo / "second").exists()


async def test_stream_dropped_after_output_keeps_partial(
    make_settings: Callable[..., Settings], repo: Path
) -> None:
    events: list[p.Event] = []
    broken = [
        ev.ContentDelta("First block. "),
        ev.BlockCommitted(0, "First block. ", 4),
        ev.ToolCallStart(0, "c9", "read_file"),
        ev.Failed(StreamInterrupted("the connection dropped after 1 blocks"), partial=True),
        ev.Finished("interrupted"),
    ]
    backend = ScriptedBackend([broken])
    session = await open_session(make_settings(), backend, repo, events)
    finished = await session.run_turn("go")
    await session.close()
    assert finished.status == "failed"
    assert "dropped" in of_type(events, p.ErrorEvent)[0].message
    assert not of_type(events, p.ToolCallStarted)
    last = load(session.transcript.path).messages[-1]
    assert last == {"role": "assistant", "content": "First block. "}


async def test_approval_through_ops(make_settings: Callable[..., Settings], repo: Path) -> None:
    """The app's path: an ApprovalRequested event answered by an ApprovalDecision op."""
    events: list[p.Event] = []
    backend = ScriptedBackend(
        [
            tool_response(("write_file", {"path": "new.txt", "content": "hi\n"})),
            tool_response(("write_file", {"path": "no.txt", "content": "x"})),
            text_response("done"),
        ]
    )
    session = await factory.open_session(
        make_settings(),
        repo,
        factory.SessionOptions(emit=events.append, approval_mode="ask", backend=backend),
    )
    await session.submit(p.UserInput(text="write"))
    for count, (decision, feedback) in enumerate(
        (("allow_once", None), ("deny", "not that file")), start=1
    ):
        await async_wait_until(
            lambda n=count: len(of_type(events, p.ApprovalRequested)) >= n,
            message=f"approval request {count}",
        )
        asks = of_type(events, p.ApprovalRequested)
        await session.submit(
            p.ApprovalDecision(request_id=asks[-1].request_id, decision=decision, feedback=feedback)
        )
    await async_wait_until(
        lambda: bool(of_type(events, p.TurnFinished)), message="the turn to finish"
    )
    await session.close()
    assert (repo / "new.txt").read_text() == "hi\n"
    assert not (repo / "no.txt").exists()
    results = of_type(events, p.ToolCallFinished)
    assert [r.status for r in results] == ["ok", "denied"]
    assert "not that file" in results[1].result


async def test_no_git_repo_works_and_says_what_needs_git(
    make_settings: Callable[..., Settings], tmp_path: Path
) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    events: list[p.Event] = []
    session = await open_session(
        make_settings(), ScriptedBackend([text_response("x")]), plain, events
    )
    finished = await session.run_turn("hi")
    await session.close()
    assert finished.status == "completed"
    assert any("not a git repository" in n.text for n in of_type(events, p.Notice))


def test_events_roundtrip_through_json(make_settings: Callable[..., Settings]) -> None:
    event = p.ToolCallFinished(call_id="a", name="shell", status="ok", result="x")
    assert p.EVENT_ADAPTER.validate_json(json.dumps(event.model_dump(mode="json"))) == event


async def test_undo_and_diff_through_ops(
    make_settings: Callable[..., Settings], repo: Path
) -> None:
    events: list[p.Event] = []
    backend = ScriptedBackend(
        [
            tool_response(
                ("edit_file", {"path": "app.py", "old_string": "a - b", "new_string": "a + b"}),
                ("write_file", {"path": "new.py", "content": "X = 1\n"}),
            ),
            text_response("done"),
        ]
    )
    session = await open_session(make_settings(), backend, repo, events)
    await session.run_turn("fix")
    await session.submit(p.ShowDiff())
    (report,) = of_type(events, p.DiffReport)
    assert sorted(report.files) == ["app.py", "new.py"] and "+    return a + b" in report.diff
    await session.submit(p.Undo())
    await session.close()
    (undone,) = of_type(events, p.UndoDone)
    assert sorted(undone.files) == ["app.py", "new.py"]
    assert (repo / "app.py").read_text() == "def add(a, b):\n    return a - b\n"
    assert not (repo / "new.py").exists()


async def test_repo_map_is_in_the_prompt_and_a_tool(
    make_settings: Callable[..., Settings], repo: Path
) -> None:
    (repo / "shop.py").write_text("from app import add\n\ndef total(xs):\n    return add(*xs)\n")
    events: list[p.Event] = []
    backend = ScriptedBackend(
        [tool_response(("repo_map", {"focus": ["shop.py"]})), text_response("ok")]
    )
    session = await open_session(make_settings(), backend, repo, events)
    await session.run_turn("map")
    await session.close()
    system = backend.requests[0].messages[0]["content"]
    assert "Repository map" in system and "def add(a, b):" in system
    (result,) = of_type(events, p.ToolCallFinished)
    assert result.status == "ok" and "def total(xs):" in result.result
