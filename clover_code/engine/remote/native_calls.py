"""Native ``tool_calls`` deltas of a streamed chat completion, assembled into calls.

Servers stream a call in one of two common styles: llama.cpp / OpenAI send its
id and name first, then partial-JSON ``arguments`` fragments; SGLang sends whole
parameters, or the whole JSON, per delta. ``NativeCalls`` turns either into
``ToolCallStart``, ``ToolCallArgs`` and ``ToolCallEnd`` events, ending a call
as soon as its arguments are one whole JSON object, and owns the indexes of
every call of the response (``ChunkDecoder`` gives calls its Qwen3 parser
finds in the text indexes from the same count).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from clover_code.engine.events import EngineEvent, ToolCallArgs, ToolCallEnd, ToolCallStart
from clover_code.protocol.json_text import JSONLimitError, loads_bounded

__all__ = ["NativeCalls"]


@dataclass(slots=True)
class NativeCall:
    """A tool call being assembled from ``tool_calls`` deltas."""

    index: int
    id: str = ""
    name: str = ""
    parts: list[str] = field(default_factory=list)
    started: bool = False
    ended: bool = False


class NativeCalls:
    """The native tool calls of one response, and the indexes of all its calls."""

    def __init__(self) -> None:
        self._calls: dict[int, NativeCall] = {}
        self._order: list[NativeCall] = []
        self._next_index = 0
        self._done = False
        self.any_started = False
        """Whether a native call has started (its ``ToolCallStart`` was sent)."""

    def new_index(self) -> int:
        """An index no call of this response has yet."""
        index = self._next_index
        self._next_index += 1
        return index

    def feed(self, deltas: list[dict[str, Any]], events: list[EngineEvent]) -> str:
        """Add one chunk's ``tool_calls`` deltas to ``events``; their raw argument text."""
        raw: list[str] = []
        for delta in deltas:
            call = self._call_for(delta, events)
            function = delta.get("function") or {}
            if delta.get("id") and not call.id:
                call.id = delta["id"]
            name = function.get("name")
            if name and not call.name:
                call.name = name
            arguments = function.get("arguments")
            if arguments is not None and not isinstance(arguments, str):
                # A few servers send the arguments as an object, not JSON text.
                arguments = json.dumps(arguments, ensure_ascii=False)
            if not call.started and call.name:
                self._start(call, events)
                if call.parts:
                    events.append(ToolCallArgs(call.index, "".join(call.parts)))
            if arguments and not call.ended:
                call.parts.append(arguments)
                raw.append(arguments)
                if call.started:
                    events.append(ToolCallArgs(call.index, arguments))
                if call.started and arguments.rstrip().endswith("}"):
                    self._end_if_whole(call, events)
        return "".join(raw)

    def _end_if_whole(self, call: NativeCall, events: list[EngineEvent]) -> None:
        """End ``call`` now when its arguments are one whole JSON object: nothing a
        server sends after the closing brace can belong to them, and the agent may
        start a reading call while the rest of the response comes."""
        text = "".join(call.parts).strip()
        try:
            value = loads_bounded(text)
        except ValueError:  # not whole yet (or never valid: told at the end)
            return
        if isinstance(value, dict):
            self._end_call(call, events, interrupted=False)

    def _call_for(self, delta: dict[str, Any], events: list[EngineEvent]) -> NativeCall:
        key = delta.get("index")
        if not isinstance(key, int):
            # Some servers omit ``index``: a new id means a new call.
            call_id = delta.get("id")
            last = self._order[-1] if self._order else None
            if last is not None and (not call_id or call_id == last.id):
                return last
            key = -1 - len(self._order)
        call = self._calls.get(key)
        if call is None:
            last = self._order[-1] if self._order else None
            if last is not None and last.started and not last.ended:
                # Servers stream calls one after another: a new one means the last is whole.
                self._end_call(last, events, interrupted=False)
            call = NativeCall(self.new_index())
            self._calls[key] = call
            self._order.append(call)
        return call

    def _start(self, call: NativeCall, events: list[EngineEvent]) -> None:
        call.started = True
        if not call.id:
            call.id = f"call_{call.index}"
        self.any_started = True
        events.append(ToolCallStart(call.index, call.id, call.name))

    def end_all(self, events: list[EngineEvent], *, interrupted: bool) -> None:
        """End every call not ended yet (once): the response is over, or broke off."""
        if self._done:
            return
        self._done = True
        for call in self._order:
            if not call.ended:
                self._end_call(call, events, interrupted=interrupted)

    def _end_call(self, call: NativeCall, events: list[EngineEvent], *, interrupted: bool) -> None:
        """The ``ToolCallEnd`` of ``call``, with its arguments or why there are none."""
        call.ended = True
        if not call.started:
            self._start(call, events)
        text = "".join(call.parts).strip()
        name = call.name or "(unnamed)"
        if interrupted:
            events.append(
                ToolCallEnd(
                    call.index,
                    call.id,
                    call.name,
                    error=f"the stream broke before the call to tool {name} was complete",
                )
            )
            return
        if not call.name:
            events.append(
                ToolCallEnd(
                    call.index,
                    call.id,
                    call.name,
                    error="a tool call arrived without a tool name; name the tool to call",
                )
            )
            return
        arguments, error = _parse_arguments(name, text)
        events.append(ToolCallEnd(call.index, call.id, call.name, arguments, error))


def _parse_arguments(name: str, text: str) -> tuple[dict[str, Any], str | None]:
    if not text:
        return {}, None
    try:
        value = loads_bounded(text)
    except JSONLimitError as exc:
        return {}, f"arguments of tool {name} were not read: {exc}; send flat, shorter arguments"
    except ValueError as exc:
        return {}, f"arguments of tool {name} are not valid JSON: {exc}; send one JSON object"
    if not isinstance(value, dict):
        return {}, (
            f"arguments of tool {name} are JSON {type(value).__name__}, not an object; "
            "send one JSON object"
        )
    return value, None
