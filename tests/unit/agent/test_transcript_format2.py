"""Format 2: each text stored once, history rewrites as what changed, and loading gives
back exactly what the session held and emitted."""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from clover_code import protocol as p
from clover_code.agent import open as factory
from clover_code.agent.session_events import NOT_RECORDED
from clover_code.agent.transcript import Transcript, load
from clover_code.agent.transcript_load import read_records
from clover_code.config.settings import Settings
from clover_code.engine.messages import Message
from clover_code.errors import UsageError
from tests.fakes import ScriptedBackend, text_response, tool_response
from tests.sessions import open_session
from tests.unit.agent.turn.test_agent_loop import of_type
from tests.waiting import async_wait_until

BIG = "".join(f"def f{n}(x):\n    return x * {n}  # a line of the big module\n" for n in range(400))


def _records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def _recorded(events: list[p.Event], messages: list[Message]) -> list[dict[str, Any]]:
    """The events a transcript records, as it records them: a finished call's result is
    the text the model got back (its tool message's)."""
    seen = {m["tool_call_id"]: m["content"] for m in messages if m["role"] == "tool"}
    return [
        {**e.model_dump(mode="json"), "result": seen[e.call_id]}
        if isinstance(e, p.ToolCallFinished)
        else e.model_dump(mode="json")
        for e in events
        if e.type not in NOT_RECORDED
    ]


async def test_a_session_loads_back_exactly_and_each_output_is_stored_once(
    make_settings: Callable[..., Settings], repo: Path
) -> None:
    (repo / "big.py").write_text(BIG)
    backend = ScriptedBackend(
        [
            tool_response(("read_file", {"path": "big.py"}), text="Reading."),
            tool_response(("shell", {"command": "seq 1 20000"})),  # cut for the model
            tool_response(
                ("edit_file", {"path": "app.py", "old_string": "a - b", "new_string": "a + b"})
            ),
            text_response("Done.", reasoning="All fixed."),
        ]
    )
    events: list[p.Event] = []
    settings = make_settings(output_limit=40_000)
    session = await open_session(settings, backend, repo, events, approval_mode="full-auto")
    await session.run_turn("read big.py, count, fix add")
    held = list(session.agent.messages)
    await session.close()

    loaded = load(session.transcript.path)
    assert loaded.messages == held
    assert loaded.events == _recorded(events, held)
    cut = next(e for e in of_type(events, p.ToolCallFinished) if e.name == "shell")
    assert cut.result != held[4]["content"]  # the model got it cut, with a note
    data = session.transcript.path.read_text()
    # The module's text went to the model once and is on disk once.
    line = "return x * 399  # a line of the big module"
    assert line in held[2]["content"] and data.count(line) == 1
    # The edit's arguments are in its call (as JSON text) and nowhere else.
    assert data.count('new_string\\": \\"a + b') == 1 and data.count('"a + b"') == 0
    kinds = [r["kind"] for r in _records(session.transcript.path)]
    assert kinds.count("tool_result") == 3 and '"role":"tool"' not in data
    assert _records(session.transcript.path)[0]["format"] == 2


async def test_approval_requests_keep_no_second_copy_of_the_arguments(
    make_settings: Callable[..., Settings], repo: Path
) -> None:
    events: list[p.Event] = []
    content = "a new file's text, written once\n" * 50
    backend = ScriptedBackend(
        [
            tool_response(("write_file", {"path": "new.txt", "content": content})),
            text_response("ok"),
        ]
    )
    session = await factory.open_session(
        make_settings(),
        repo,
        factory.SessionOptions(emit=events.append, approval_mode="ask", backend=backend),
    )
    await session.submit(p.UserInput(text="write"))
    await async_wait_until(lambda: bool(of_type(events, p.ApprovalRequested)), message="the ask")
    (ask,) = of_type(events, p.ApprovalRequested)
    await session.submit(p.ApprovalDecision(request_id=ask.request_id, decision="allow_once"))
    await async_wait_until(lambda: bool(of_type(events, p.TurnFinished)), message="the turn")
    await session.close()

    loaded = load(session.transcript.path)
    assert loaded.events == _recorded(events, session.agent.messages)
    # The call's JSON text holds it (escaped), and the approval's diff shows it as lines;
    # the result's diff is the same diff, not stored again.
    assert session.transcript.path.read_text().count("a new file's text, written once") == 100


async def test_history_rewrites_store_what_changed(
    make_settings: Callable[..., Settings], repo: Path
) -> None:
    backend = ScriptedBackend(
        [text_response(f"answer {n} " + "x" * 2000) for n in range(4)], summary="Summary."
    )
    events: list[p.Event] = []
    session = await open_session(make_settings(), backend, repo, events)
    for n in range(3):
        await session.run_turn(f"question {n}")
    assert session.agent.forget_from(3)  # the conversation part of an undo
    await session.run_turn("question 3")
    await session.agent.compact()  # everything before the last answer is summarised
    held = list(session.agent.messages)
    await session.close()

    records = _records(session.transcript.path)
    edits = [r for r in records if r["kind"] == "history_edit"]
    assert [(r["keep"], len(r["messages"]), r["tail"]) for r in edits] == [
        (4, 0, 0),  # the third turn cut off
        (0, 1, 1),  # the summary, then the last answer kept
    ]
    assert all(len(json.dumps(r)) < 1000 for r in edits)
    assert load(session.transcript.path).messages == held


def test_a_torn_history_edit_leaves_the_history_before_it(tmp_path: Path) -> None:
    transcript = Transcript.create(tmp_path, {"id": "20260101-000000-aaaaaa", "cwd": "/repo"})
    one = [{"role": "user", "content": "one"}, {"role": "assistant", "content": "two"}]
    for message in one:
        transcript.message(message)  # type: ignore[arg-type]
    transcript.history(one[:1])  # type: ignore[arg-type]
    transcript.close()
    data = transcript.path.read_bytes()
    assert json.loads(data.splitlines()[-1])["kind"] == "history_edit"
    transcript.path.write_bytes(data[:-10])
    loaded = load(transcript.path)
    assert loaded.dropped_torn_line and loaded.messages == one


def test_a_reference_to_no_line_is_damage_named_by_line(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    lines = [
        {"kind": "meta", "format": 2, "id": "s", "cwd": "/repo"},
        {"kind": "message", "message": {"role": "user", "content": "hi"}},
        {
            "kind": "event",
            "event": {"type": "tool_call_started", "call_id": "c"},
            "arguments_from": -1,
        },
        {"kind": "message", "message": {"role": "assistant", "content": "x"}},
    ]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    with pytest.raises(UsageError, match=r"damaged at line 3 \(it refers to a line"):
        load(path)


@pytest.mark.parametrize(
    "newer",
    [
        [{"kind": "meta", "format": 3, "id": "s", "cwd": "/repo"}],
        [{"kind": "meta", "format": 2, "id": "s", "cwd": "/repo"}, {"kind": "format", "format": 3}],
    ],
)
def test_a_newer_format_is_refused_in_one_sentence(
    newer: list[dict[str, Any]], tmp_path: Path
) -> None:
    path = tmp_path / "s.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in newer))
    with pytest.raises(UsageError) as info:
        load(path)
    assert str(info.value) == (
        f"session file {path} was written by a newer clover-code (transcript format 3; "
        "this one reads up to 2); update clover-code to open it."
    )


def test_unknown_kinds_are_skipped(tmp_path: Path) -> None:
    transcript = Transcript.create(tmp_path, {"id": "20260101-000000-aaaaaa", "cwd": "/repo"})
    transcript.message({"role": "user", "content": "one"})
    transcript.append({"kind": "fill_confidence", "bytes": "AAEC"})  # a later version's
    transcript.message({"role": "assistant", "content": "two"})
    transcript.close()
    assert [m["content"] for m in load(transcript.path).messages] == ["one", "two"]


def test_a_whole_last_line_without_its_newline_is_torn(tmp_path: Path) -> None:
    transcript = Transcript.create(tmp_path, {"id": "20260101-000000-aaaaaa", "cwd": "/repo"})
    transcript.message({"role": "user", "content": "one"})
    transcript.message({"role": "assistant", "content": "two"})
    transcript.close()
    transcript.path.write_bytes(transcript.path.read_bytes()[:-1])
    assert load(transcript.path).dropped_torn_line
    again = Transcript.reopen(transcript.path)
    assert again.loaded is not None and [m["content"] for m in again.loaded.messages] == ["one"]
    again.message({"role": "assistant", "content": "three"})
    again.close()
    assert [m["content"] for m in load(transcript.path).messages] == ["one", "three"]


def test_random_sessions_read_back_as_written_and_every_prefix_reads(tmp_path: Path) -> None:
    """Sessions of random steps (calls with results, approvals with diffs, reused call
    ids, rewrites of the history, events no message answers): what loads is what was
    recorded, and a file cut after any of its lines loads too."""
    rng = random.Random(7)
    for number in range(30):
        transcript = Transcript.create(tmp_path, {"id": f"s{number}", "cwd": "/repo"})
        held: list[Message] = []
        events: list[dict[str, Any]] = []
        answers: set[str] = set()
        for step in range(rng.randint(1, 12)):
            choice = rng.random()
            if choice < 0.15 and held:
                cut = rng.randint(0, len(held))
                held = held[:cut] + [{"role": "user", "content": f"summary {step}"}] * rng.randint(
                    0, 1
                )
                transcript.history(held)
                continue
            user: Message = {"role": "user", "content": f"prompt {step}"}
            held.append(user)
            transcript.message(user)
            ids = [f"call_{rng.randint(0, 2)}" for _ in range(rng.randint(0, 3))]
            calls = [
                {
                    "id": i,
                    "type": "function",
                    "function": {
                        "name": "write_file",
                        "arguments": json.dumps({"path": f"f{n}", "content": "x" * n}),
                    },
                }
                for n, i in enumerate(ids)
            ]
            reply: Message = {"role": "assistant", "content": f"reply {step}"}
            if calls:
                reply["tool_calls"] = calls  # type: ignore[typeddict-item]
            held.append(reply)
            transcript.message(reply)
            for n, call_id in enumerate(ids):
                arguments = {"path": f"f{n}", "content": "x" * n}
                if rng.random() < 0.5:
                    arguments = {"path": "changed by a hook"}
                started = {
                    "type": "tool_call_started",
                    "call_id": call_id,
                    "name": "write_file",
                    "kind": "edit",
                    "arguments": arguments,
                    "summary": "",
                }
                events.append(started)
                transcript.event(started)
                diff = f"+{'x' * n}\n"
                if rng.random() < 0.5:
                    asked = {
                        "type": "approval_requested",
                        "request_id": f"r{n}",
                        "call_id": call_id,
                        "name": "write_file",
                        "kind": "edit",
                        "summary": "",
                        "arguments": arguments,
                        "diff": diff,
                    }
                    events.append(asked)
                    transcript.event(asked)
                display = {
                    "kind": "file_edit",
                    "path": f"f{n}",
                    "diff": diff if rng.random() < 0.8 else "other",
                }
                result = f"wrote f{n}" + ("" if rng.random() < 0.8 else " (cut)")
                finished = {
                    "type": "tool_call_finished",
                    "call_id": call_id,
                    "name": "write_file",
                    "status": "ok",
                    "result": result,
                    "display": display,
                }
                events.append(finished)
                transcript.event(finished)
            for call_id in ids:
                if rng.random() < 0.9:
                    answer: Message = {
                        "role": "tool",
                        "tool_call_id": call_id,
                        "content": f"wrote {call_id}",
                    }
                    held.append(answer)
                    answers.add(answer["content"])
                    transcript.message(answer)
            if rng.random() < 0.5:
                transcript.commit()
        transcript.close()

        loaded = load(transcript.path)
        recorded = read_records(transcript.path.read_bytes(), transcript.path)
        assert recorded.recorded == held
        # Each event comes back; a finished one with its own result, or the text a tool
        # message answering its call gave the model.
        assert sorted(map(_without_result, loaded.events)) == sorted(map(_without_result, events))
        results = {e["result"] for e in events if e["type"] == "tool_call_finished"}
        finished = [e for e in loaded.events if e["type"] == "tool_call_finished"]
        assert all(e["result"] in answers | results for e in finished)
        data = transcript.path.read_bytes()
        ends = [i + 1 for i, byte in enumerate(data) if byte == ord("\n")]
        for end in ends:
            cut_path = tmp_path / "cut.jsonl"
            cut_path.write_bytes(data[:end])
            load(cut_path)  # never "damaged": every reference points up


def _without_result(event: dict[str, Any]) -> str:
    return json.dumps({k: v for k, v in event.items() if k != "result"}, sort_keys=True)
