"""Assembling qwen3_coder tool calls into ``ToolCall*`` events, typed by the tools' schemas.

``Qwen3StreamParser`` finds the markup; ``CallBuilder`` turns what it finds
(a function name, a parameter's raw text, the end of the call) into
``ToolCallStart``, ``ToolCallArgs`` fragments of the arguments' JSON and a
``ToolCallEnd`` carrying the typed arguments or the reason they could not be
read (an unknown tool, a value that does not fit its schema).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from clover_code.engine.base import ToolSpec
from clover_code.engine.events import EngineEvent, ToolCallArgs, ToolCallEnd, ToolCallStart
from clover_code.engine.qwen3.schema_values import ParamTypes, convert_value, tool_param_types
from clover_code.engine.qwen3.tags import _new_call_id

__all__ = ["Call", "CallBuilder"]


@dataclass(slots=True)
class Call:
    """A tool call being read."""

    index: int
    id: str
    name: str
    types: dict[str, ParamTypes] | None  # None: no schema known, every value is a string
    error: str | None = None
    arguments: dict[str, Any] = field(default_factory=dict)
    param: str = ""
    value: list[str] = field(default_factory=list)


class CallBuilder:
    """The calls of one response; each method returns the events it settles."""

    def __init__(self, tools: Sequence[ToolSpec]) -> None:
        self._schemas = {tool.name: tool_param_types(tool.parameters) for tool in tools}
        self._tool_names = ", ".join(tool.name for tool in tools)
        self._next_index = 0
        self.current: Call | None = None
        """The call whose parameters are being read (the XML form)."""
        self.seen = False
        """Whether a call (with a function name) has started in this response."""

    def start(self, name: str) -> tuple[Call, list[EngineEvent]]:
        """A call to ``name`` begins (not yet ``current``: the caller decides)."""
        error = None
        if self._schemas and name not in self._schemas:
            error = f"unknown tool '{name}'; available: {self._tool_names}"
        call = Call(self._next_index, _new_call_id(), name, self._schemas.get(name), error)
        self._next_index += 1
        self.seen = True
        return call, [ToolCallStart(call.index, call.id, call.name)]

    def whole(self, name: str, arguments: dict[str, Any]) -> list[EngineEvent]:
        """A complete call in the JSON form: start, all arguments, end."""
        call, events = self.start(name)
        events.append(ToolCallArgs(call.index, json.dumps(arguments, ensure_ascii=False)))
        events.append(ToolCallEnd(call.index, call.id, call.name, arguments, call.error))
        return events

    def parameter(self, call: Call, raw: str) -> list[EngineEvent]:
        """The raw text of ``call.param`` is complete: convert it by the schema and add it."""
        name = call.param
        types = call.types.get(name) if call.types is not None else None
        try:
            value = convert_value(raw, types)
        except ValueError as exc:
            value = convert_value(raw, None)
            if call.error is None:
                call.error = f"parameter '{name}' of tool '{call.name}': {exc}"
        first = not call.arguments
        call.arguments[name] = value
        key = json.dumps(name, ensure_ascii=False)
        text = json.dumps(value, ensure_ascii=False)
        return [ToolCallArgs(call.index, f"{'{' if first else ', '}{key}: {text}")]

    def cut_off(self, inside_value: bool) -> list[EngineEvent]:
        """The output ended with the current call open (``inside_value``: inside a value)."""
        call = self.current
        if call is None:
            return []
        if inside_value:
            reason = (
                f"tool call '{call.name}' was cut off inside parameter '{call.param}': "
                "the output ended before </parameter>; send the whole call again"
            )
        else:
            reason = (
                f"tool call '{call.name}' was cut off: the output ended before "
                "</function>; send the whole call again"
            )
        return self.end(reason)

    def end(self, error: str | None = None) -> list[EngineEvent]:
        """The current call is over (``error``: why it is incomplete)."""
        call = self.current
        if call is None:
            return []
        self.current = None
        return [
            ToolCallArgs(call.index, "}" if call.arguments else "{}"),
            ToolCallEnd(call.index, call.id, call.name, call.arguments, call.error or error),
        ]
