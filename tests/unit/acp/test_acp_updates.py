"""Protocol events -> ACP updates, prompt content -> text, and transcript replay."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import pytest
from acp import RequestError
from acp.schema import (
    AudioContentBlock,
    EmbeddedResourceContentBlock,
    ImageContentBlock,
    ResourceContentBlock,
    TextContentBlock,
    TextResourceContents,
)

from clover_code import protocol as p
from clover_code.acp.content import prompt_input
from clover_code.acp.replay import replay_updates
from clover_code.acp.tool_cards import fenced
from clover_code.acp.updates import TOKEN_LIMIT_NOTICE, EventMapper, stop_reason
from clover_code.agent.transcript import LoadedSession

ROOT = Path("/work/repo")


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def mapper(
    *,
    asks: bool = False,
    edits: dict[Path, tuple[str | None, str]] | None = None,
    clock: Clock | None = None,
    logged: list[str] | None = None,
) -> EventMapper:
    recorded = dict(edits or {})
    return EventMapper(
        ROOT,
        needs_approval=lambda kind: asks and kind in ("edit", "execute"),
        take_edit=lambda path: recorded.pop(path, None),
        log=(logged.append if logged is not None else lambda _m: None),
        clock=clock or Clock(),
    )


def dumped(updates: list[Any]) -> list[dict[str, Any]]:
    return [u.model_dump(by_alias=True, exclude_none=True) for u in updates]


def started(call_id: str = "c1", name: str = "edit_file", kind: str = "edit") -> p.ToolCallStarted:
    return p.ToolCallStarted(
        call_id=call_id, name=name, kind=kind, arguments={"path": "a.py"}, summary="a.py"
    )


def test_text_is_sent_once_per_committed_block_thought_before_message() -> None:
    m = mapper()
    assert m.feed(p.ReasoningDelta(text="let me ")) == []
    assert m.feed(p.ReasoningDelta(text="think")) == []
    assert m.feed(p.ContentDelta(text="Hello")) == []
    out = dumped(m.feed(p.BlockCommitted(block=0, text="...", token_count=32)))
    assert out == [
        {
            "sessionUpdate": "agent_thought_chunk",
            "content": {"type": "text", "text": "let me think"},
        },
        {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "Hello"}},
    ]
    assert m.feed(p.BlockCommitted(block=1, text="", token_count=1)) == []


def test_a_blocks_fill_confidences_ride_on_its_last_chunk_as_metadata() -> None:
    m = mapper()
    m.feed(p.ReasoningDelta(text="hm"))
    m.feed(p.ContentDelta(text="Hi"))
    out = dumped(
        m.feed(p.BlockCommitted(block=3, text="hm</think>Hi", token_count=4, confidence="f38B"))
    )
    assert "_meta" not in out[0]
    assert out[1]["_meta"] == {"clover": {"block": 3, "confidence": "f38B"}}


def test_tool_call_lifecycle_with_approval_and_diff() -> None:
    edits = {ROOT / "a.py": ("old\n", "new\n")}
    m = mapper(asks=True, edits=edits)
    start = dumped(m.feed(started()))[0]
    assert start["status"] == "pending" and start["kind"] == "edit"
    assert start["title"] == "Edit a.py"
    assert start["locations"] == [{"path": "/work/repo/a.py"}]
    end = dumped(
        m.feed(
            p.ToolCallFinished(
                call_id="c1",
                name="edit_file",
                status="ok",
                result="Edited a.py",
                display=p.FileEdit(path="a.py", diff="--- a/a.py\n+++ b/a.py\n"),
            )
        )
    )[0]
    assert end["status"] == "completed"
    assert end["content"] == [
        {"type": "diff", "path": "/work/repo/a.py", "oldText": "old\n", "newText": "new\n"}
    ]


def test_unrecorded_edit_falls_back_to_a_fenced_diff_and_errors_fail() -> None:
    m = mapper()
    m.feed(started())
    end = dumped(
        m.feed(
            p.ToolCallFinished(
                call_id="c1",
                name="edit_file",
                status="ok",
                result="Edited",
                display=p.FileEdit(path="a.py", diff="-a\n+b\n"),
            )
        )
    )[0]
    assert end["content"][0]["content"]["text"] == "```diff\n-a\n+b\n```"
    m.feed(started("c2", "read_file", "read"))
    failed = dumped(
        m.feed(p.ToolCallFinished(call_id="c2", name="read_file", status="error", result="boom"))
    )[0]
    assert failed["status"] == "failed" and failed["content"][0]["content"]["text"] == "boom"


def test_an_edit_s_diagnostics_follow_its_diff() -> None:
    m = mapper(edits={ROOT / "a.py": ("old\n", "new\n")})
    m.feed(started())
    found = p.Diagnostic(
        path="a.py", line=2, column=5, severity="error", message="bad type", code="X1"
    )
    end = dumped(
        m.feed(
            p.ToolCallFinished(
                call_id="c1",
                name="edit_file",
                status="ok",
                result="Edited a.py",
                display=p.FileEdit(path="a.py", diff="-old\n+new\n", diagnostics=[found]),
            )
        )
    )[0]
    diff, text = end["content"]
    assert diff["type"] == "diff"
    assert text["content"]["text"] == ("Diagnostics after this change:\na.py:2:5: error: bad type")


def test_repeated_server_call_ids_stay_unique() -> None:
    m = mapper()
    ids = []
    for _ in range(3):
        ids.append(dumped(m.feed(started("call_0")))[0]["toolCallId"])
        m.feed(p.ToolCallFinished(call_id="call_0", name="edit_file", status="ok", result=""))
    assert ids == ["call_0", "call_0-2", "call_0-3"]


def test_command_output_is_throttled_and_terminal_replaces_it() -> None:
    clock = Clock()
    m = mapper(clock=clock)
    m.feed(started("c1", "shell", "execute"))
    assert len(m.feed(p.ToolOutput(call_id="c1", text="a\n"))) == 1
    assert m.feed(p.ToolOutput(call_id="c1", text="b\n")) == []
    clock.now = 1.0
    live = dumped(m.feed(p.ToolOutput(call_id="c1", text="c\n")))[0]
    assert live["content"][0]["content"]["text"] == "```\na\nb\nc\n```"
    attached = dumped(m.attach_terminal("t1"))[0]
    assert attached["content"] == [{"type": "terminal", "terminalId": "t1"}]
    end = dumped(m.feed(p.ToolCallFinished(call_id="c1", name="shell", status="ok", result="x")))
    assert end[0]["content"] == [{"type": "terminal", "terminalId": "t1"}]
    assert m.attach_terminal("t2") == []


def test_plan_usage_errors_and_notices() -> None:
    logged: list[str] = []
    m = mapper(logged=logged)
    m.feed(p.Notice(level="warning", text="outside a turn"))
    assert logged == ["warning: outside a turn"]
    m.feed(p.TurnStarted(turn=1, text="x"))
    todo = p.TodoUpdated(items=[p.TodoItem(text="a", status="done"), p.TodoItem(text="b")])
    plan = dumped(m.feed(todo))[0]
    assert [(e["content"], e["status"]) for e in plan["entries"]] == [
        ("a", "completed"),
        ("b", "pending"),
    ]
    usage = p.UsageReport(prompt_tokens=100, completion_tokens=20, context_window=1000)
    assert dumped(m.feed(usage))[0] == {"sessionUpdate": "usage_update", "used": 120, "size": 1000}
    error = dumped(m.feed(p.ErrorEvent(message="server down")))[0]
    assert "**Error:** server down" in error["content"]["text"]
    assert m.last_error == "server down"
    assert m.feed(p.Notice(level="warning", text=TOKEN_LIMIT_NOTICE)) == []
    assert m.hit_token_limit


@pytest.mark.parametrize(
    ("status", "hit", "reason"),
    [
        ("completed", False, "end_turn"),
        ("completed", True, "max_tokens"),
        ("interrupted", False, "cancelled"),
        ("max_turns", False, "max_turn_requests"),
        ("timeout", False, "max_turn_requests"),
        ("failed", False, None),
    ],
)
def test_stop_reasons(status: p.TurnStatus, hit: bool, reason: str | None) -> None:
    assert stop_reason(status, hit) == reason


def test_fence_outgrows_backticks_in_the_text() -> None:
    assert fenced("a ```` b") == "`````\na ```` b\n`````"


def test_prompt_input_from_content_blocks() -> None:
    blocks = [
        TextContentBlock(type="text", text="Fix "),
        ResourceContentBlock(type="resource_link", name="a", uri="file:///work/repo/src/a.py"),
        TextContentBlock(type="text", text=" using"),
        EmbeddedResourceContentBlock(
            type="resource",
            resource=TextResourceContents(uri="file:///work/repo/b.py", text="x = 1"),
        ),
    ]
    assert prompt_input(blocks, ROOT) == (
        'Fix @src/a.py using\n<context source="b.py">\nx = 1\n</context>\n',
        (),
    )
    with pytest.raises(RequestError, match="not a PNG, JPEG, GIF or WebP image"):
        prompt_input([ImageContentBlock(type="image", data="", mime_type="image/png")], ROOT)
    with pytest.raises(RequestError, match="no audio"):
        prompt_input([AudioContentBlock(type="audio", data="AAAA", mime_type="audio/wav")], ROOT)
    with pytest.raises(RequestError, match="empty"):
        prompt_input([TextContentBlock(type="text", text=" ")], ROOT)


def test_prompt_input_takes_an_image_by_its_bytes() -> None:
    png = b"\x89PNG\r\n\x1a\n" + bytes(40)
    block = ImageContentBlock(
        type="image",
        data=base64.b64encode(png).decode(),
        mime_type="image/jpeg",  # what the editor claims; the bytes decide
        uri="file:///work/repo/shots/a.png",
    )
    text, images = prompt_input([TextContentBlock(type="text", text="what is wrong?"), block], ROOT)
    assert text == "what is wrong?"
    assert [(i.media_type, i.source) for i in images] == [("image/png", "shots/a.png")]
    assert base64.b64decode(images[0].data) == png
    alone = ImageContentBlock(type="image", data=block.data, mime_type="image/png")
    assert prompt_input([alone], ROOT)[1][0].source == "image 1"  # an image alone is a prompt
    with pytest.raises(RequestError, match="not valid base64"):
        prompt_input([ImageContentBlock(type="image", data="@@@", mime_type="image/png")], ROOT)


def test_replay_tells_the_conversation_with_reused_call_ids() -> None:
    call = {
        "id": "call_0",
        "type": "function",
        "function": {"name": "edit_file", "arguments": "{}"},
    }
    loaded = LoadedSession(
        meta={"id": "s"},
        messages=[
            {"role": "user", "content": "fix it"},
            {"role": "assistant", "content": "", "reasoning_content": "hmm", "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "call_0", "content": "denied: no"},
            {"role": "assistant", "content": "again", "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "call_0", "content": "Edited a.py"},
            {"role": "assistant", "content": "Done."},
        ],
        events=[
            started("call_0").model_dump(),
            {
                "type": "tool_call_finished",
                "call_id": "call_0",
                "name": "edit_file",
                "status": "denied",
                "result": "denied: no",
            },
            started("call_0").model_dump(),
            {
                "type": "tool_call_finished",
                "call_id": "call_0",
                "name": "edit_file",
                "status": "ok",
                "result": "Edited a.py",
                "display": {"path": "a.py", "diff": "-a\n"},
            },
            {"type": "some_future_event"},
        ],
    )
    out = dumped(replay_updates(loaded, ROOT))
    kinds = [u["sessionUpdate"] for u in out]
    assert kinds == [
        "user_message_chunk",
        "agent_thought_chunk",
        "tool_call",
        "tool_call_update",
        "agent_message_chunk",
        "tool_call",
        "tool_call_update",
        "agent_message_chunk",
    ]
    assert [out[3]["status"], out[6]["status"]] == ["failed", "completed"]
    assert out[2]["toolCallId"] != out[5]["toolCallId"]


def test_child_tool_calls_are_tool_calls_of_their_own_and_child_text_is_not_sent() -> None:
    m = mapper()
    m.feed(p.ToolCallStarted(call_id="t1", name="task", kind="other", arguments={}, summary="x"))

    def child(event: p.Event) -> p.SubagentEvent:
        return p.SubagentEvent(parent_call_id="t1", agent="explore", event=event)

    assert m.feed(child(p.ContentDelta(text="secret thinking aloud"))) == []
    assert m.feed(child(p.BlockCommitted(block=0, text="x", token_count=1))) == []
    start = dumped(m.feed(child(started("call_0", "read_file", "read"))))[0]
    assert start["toolCallId"] == "t1/call_0" and start["title"] == "explore: Read a.py"
    end = dumped(
        m.feed(
            child(p.ToolCallFinished(call_id="call_0", name="read_file", status="ok", result="A"))
        )
    )[0]
    assert end["toolCallId"] == "t1/call_0" and end["status"] == "completed"
    assert end["content"][0]["content"]["text"] == "```\nA\n```"
    done = dumped(
        m.feed(p.ToolCallFinished(call_id="t1", name="task", status="ok", result="answer"))
    )
    assert [d["toolCallId"] for d in done] == ["t1"]
    assert done[0]["content"][0]["content"]["text"] == "answer"


def test_a_background_task_call_stays_in_progress_until_its_child_ends() -> None:
    m = mapper()
    m.feed(p.TurnStarted(turn=1, text="go"))
    m.feed(p.ToolCallStarted(call_id="t1", name="task", kind="other", arguments={}, summary="x"))
    returned = dumped(
        m.feed(
            p.ToolCallFinished(
                call_id="t1",
                name="task",
                status="ok",
                result="Started the explore agent in the background as task-1.",
                display=p.BackgroundTask(task_id="task-1", agent="explore"),
            )
        )
    )
    assert returned[-1]["toolCallId"] == "t1" and returned[-1]["status"] == "in_progress"
    m.feed(p.TurnFinished(turn=1, status="completed"))
    # The child's calls still show under the parent's call after the turn ended.
    child = p.SubagentEvent(parent_call_id="t1", agent="explore", event=started("c0", "grep"))
    assert dumped(m.feed(child))[0]["toolCallId"] == "t1/c0"
    run = p.SubagentRun(call_id="t1", agent="explore", tokens=9, duration_s=1.0, status="completed")
    ended = dumped(
        m.feed(
            p.BackgroundTaskFinished(
                call_id="t1",
                task_id="task-1",
                agent="explore",
                status="ok",
                result="found it",
                display=run,
            )
        )
    )
    assert ended[-1]["toolCallId"] == "t1" and ended[-1]["status"] == "completed"
    assert ended[-1]["content"][0]["content"]["text"] == "found it"
