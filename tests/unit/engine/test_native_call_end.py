"""A native tool call ends as soon as it is whole, not when the response ends.

The agent starts reading calls while the rest of the response streams, so the
decoder must say a call is complete at the first moment it knows: when its
JSON arguments close, or when the next call begins.
"""

from __future__ import annotations

from typing import Any

from clover_code.engine.events import EngineEvent, ToolCallEnd
from clover_code.engine.remote.chunks import ChunkDecoder


def _delta(index: int, *, name: str | None = None, arguments: str = "") -> dict[str, Any]:
    call: dict[str, Any] = {"index": index, "function": {"arguments": arguments}}
    if name is not None:
        call["id"] = f"call_{index}"
        call["function"]["name"] = name
    return {"choices": [{"delta": {"tool_calls": [call]}}]}


def _ends(events: list[EngineEvent]) -> list[ToolCallEnd]:
    return [e for e in events if isinstance(e, ToolCallEnd)]


def test_a_call_ends_when_its_arguments_close() -> None:
    decoder = ChunkDecoder(block_size=32)
    assert not _ends(decoder.feed(_delta(0, name="read_file")))
    assert not _ends(decoder.feed(_delta(0, arguments='{"path": ')))
    (end,) = _ends(decoder.feed(_delta(0, arguments='"a.py"}')))
    assert (end.name, end.arguments, end.error) == ("read_file", {"path": "a.py"}, None)
    finished = decoder.feed({"choices": [{"delta": {}, "finish_reason": "tool_calls"}]})
    assert not _ends(finished) and not _ends(decoder.finish())


def test_a_brace_inside_a_string_does_not_end_the_call() -> None:
    decoder = ChunkDecoder(block_size=32)
    decoder.feed(_delta(0, name="grep"))
    assert not _ends(decoder.feed(_delta(0, arguments='{"pattern": "a}')))
    (end,) = _ends(decoder.feed(_delta(0, arguments='"}')))
    assert end.arguments == {"pattern": "a}"}


def test_the_next_call_ends_the_one_before() -> None:
    decoder = ChunkDecoder(block_size=32)
    decoder.feed(_delta(0, name="list_files", arguments=""))
    (end,) = _ends(decoder.feed(_delta(1, name="read_file")))
    assert (end.name, end.arguments) == ("list_files", {})
    (last,) = _ends(decoder.feed(_delta(1, arguments='{"path": "b.py"}')))
    assert last.arguments == {"path": "b.py"}


def test_a_broken_stream_still_marks_an_open_call_incomplete() -> None:
    decoder = ChunkDecoder(block_size=32)
    decoder.feed(_delta(0, name="read_file", arguments='{"path": "a'))
    (end,) = _ends(decoder.interrupt())
    assert end.error is not None and "broke" in end.error
