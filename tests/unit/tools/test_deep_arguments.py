"""Tool arguments nested thousands deep, or huge, through every parser that reads them.

``json.loads`` recurses once per level, so ``{"path": [[[[...]]]]}`` 5,000
deep (about 10 kB) raised ``RecursionError`` in the argument parser and ended
the session. Each parser (the OpenAI ``tool_calls`` arguments, the Qwen3 XML
parameters converted by the schema, the older JSON form inside
``<tool_call>``, a server's whole chunk, an editor's ACP line), and the other
JSON the model or a repository writes (a final answer for --output-schema,
``.mcp.json``, ``devcontainer.json``), must measure the text first and give
back one sentence.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from clover_code.acp.transport import LineTransport
from clover_code.config.loosening import mcp_loosening
from clover_code.config.project_definition import parse_jsonc
from clover_code.engine.base import ToolSpec
from clover_code.engine.events import EngineEvent, ToolCallEnd
from clover_code.engine.qwen3.parser import Qwen3StreamParser
from clover_code.engine.qwen3.schema_values import convert_value
from clover_code.engine.remote.chunks import ChunkDecoder
from clover_code.engine.remote.retry import error_message
from clover_code.outcome.output_schema import OutputSchema
from clover_code.protocol.json_text import (
    MAX_JSON_DEPTH,
    JSONLimitError,
    json_depth,
    loads_bounded,
)
from clover_code.tools.mcp_config import read_project_servers

DEPTH = 5000
DEEP_LIST = "[" * DEPTH + "]" * DEPTH
DEEP_OBJECT = '{"a": ' * DEPTH + "1" + "}" * DEPTH
# Every shape of deep value: lists, objects, both interleaved, and unclosed.
DEEP_VALUES = {
    "list": DEEP_LIST,
    "object": DEEP_OBJECT,
    "mixed": '[{"a": ' * (DEPTH // 2) + "1" + "}]" * (DEPTH // 2),
    "unclosed": "[" * DEPTH,
}

TOOLS = [
    ToolSpec(
        "read_file",
        "read",
        {
            "type": "object",
            "properties": {
                "path": {"type": "string"},
                "ranges": {"type": "array"},
                "extra": {},
            },
        },
    )
]


def _end(events: list[EngineEvent]) -> ToolCallEnd:
    (end,) = [e for e in events if isinstance(e, ToolCallEnd)]
    return end


@pytest.mark.parametrize("shape", sorted(DEEP_VALUES))
def test_openai_tool_call_arguments_nested_deep(shape: str) -> None:
    decoder = ChunkDecoder(block_size=32, raw_parsing="never", tools=TOOLS)
    text = '{"path": ' + DEEP_VALUES[shape] + "}"
    call = {"index": 0, "id": "c1", "type": "function"}
    events = decoder.feed(
        {"choices": [{"delta": {"tool_calls": [{**call, "function": {"name": "read_file"}}]}}]}
    )
    events += decoder.feed(
        {"choices": [{"delta": {"tool_calls": [{"index": 0, "function": {"arguments": text}}]}}]}
    )
    events += decoder.feed({"choices": [{"delta": {}, "finish_reason": "tool_calls"}]})
    end = _end(events)
    assert end.arguments == {}
    assert end.error is not None
    assert "nested" in end.error and f"more than the {MAX_JSON_DEPTH} allowed" in end.error
    assert "\n" not in end.error


@pytest.mark.parametrize("param", ["ranges", "extra"])
@pytest.mark.parametrize("shape", sorted(DEEP_VALUES))
def test_qwen3_parameter_nested_deep(param: str, shape: str) -> None:
    parser = Qwen3StreamParser(TOOLS, starts_in_reasoning=False)
    body = f"<parameter={param}>\n{DEEP_VALUES[shape]}\n</parameter>\n"
    text = f"<tool_call>\n<function=read_file>\n{body}</function>\n</tool_call>"
    end = _end(parser.feed(text) + parser.finish())
    if param == "ranges":  # typed array: a refusal naming the parameter
        assert end.error is not None and f"parameter '{param}'" in end.error
        assert "nested" in end.error
    # Either way the value is kept as plain text, never parsed.
    assert end.arguments[param] == DEEP_VALUES[shape]


@pytest.mark.parametrize("shape", sorted(DEEP_VALUES))
def test_qwen3_json_form_nested_deep(shape: str) -> None:
    parser = Qwen3StreamParser(TOOLS, starts_in_reasoning=False)
    body = '{"name": "read_file", "arguments": {"path": ' + DEEP_VALUES[shape] + "}}"
    events = parser.feed(f"<tool_call>\n{body}\n</tool_call>") + parser.finish()
    # Not read as a call: the text passes through as the answer, no exception.
    assert not [e for e in events if isinstance(e, ToolCallEnd)]


def test_qwen3_json_form_with_deep_arguments_string() -> None:
    parser = Qwen3StreamParser(TOOLS, starts_in_reasoning=False)
    body = json.dumps({"name": "read_file", "arguments": '{"path": ' + DEEP_LIST + "}"})
    events = parser.feed(f"<tool_call>\n{body}\n</tool_call>") + parser.finish()
    assert not [e for e in events if isinstance(e, ToolCallEnd)]


@pytest.mark.parametrize("types", [("array",), ("object",), ("integer", "array")])
def test_schema_conversion_refuses_deep_json(types: tuple[str, ...]) -> None:
    with pytest.raises(ValueError, match="nested 5000 levels deep"):
        convert_value(DEEP_LIST, types)


def test_an_error_body_nested_deep_is_shown_as_text() -> None:
    assert error_message(DEEP_LIST.encode()).startswith("[[[[")


async def test_an_acp_line_nested_deep_gets_a_parse_error() -> None:
    reader = asyncio.StreamReader()
    line = '{"jsonrpc": "2.0", "id": 1, "method": "x", "params": ' + DEEP_LIST + "}\n"
    reader.feed_data(line.encode())
    reader.feed_data(b'{"jsonrpc": "2.0", "id": 2, "method": "initialize"}\n')
    reader.feed_eof()
    sent: list[bytes] = []

    class _Sink:
        def write(self, data: bytes) -> None:
            sent.append(data)

        async def drain(self) -> None:
            pass

        def close(self) -> None:
            pass

    transport = LineTransport(reader, _Sink())
    message = await transport.receive()
    assert message is not None and message["id"] == 2
    (reply,) = [json.loads(line) for line in b"".join(sent).splitlines()]
    assert reply["error"]["code"] == -32700
    assert "nested 5001 levels deep" in reply["error"]["message"]


@pytest.mark.parametrize(
    ("text", "depth"),
    [
        ("1", 0),
        ("[]", 1),
        ('{"a": [1, {"b": []}]}', 4),
        ('"[[[["', 0),
        ('["\\"[[", []]', 2),
        ('"unclosed [[[', 0),
        ("]]]]", 0),
        (DEEP_LIST, DEPTH),
    ],
)
def test_json_depth(text: str, depth: int) -> None:
    assert json_depth(text) == depth


def test_loads_bounded_bounds_size_and_depth() -> None:
    deep_enough: Any = loads_bounded("[" * MAX_JSON_DEPTH + "]" * MAX_JSON_DEPTH)
    assert isinstance(deep_enough, list)
    with pytest.raises(JSONLimitError, match="nested 65 levels deep"):
        loads_bounded("[" * 65 + "]" * 65)
    with pytest.raises(JSONLimitError, match="12 characters long, more than the 10 allowed"):
        loads_bounded('"0123456789"', max_bytes=10)
    huge_array = "[" + "1," * 4_100_000 + "1]"
    with pytest.raises(JSONLimitError, match="characters long"):
        loads_bounded(huge_array)
    assert loads_bounded(b'{"a": "\xc3\xa9"}') == {"a": "\u00e9"}
    with pytest.raises(ValueError):
        loads_bounded("{")


# -- other JSON the model or the repository controls --------------------------------


def test_a_final_answer_nested_deep_fails_the_output_schema(tmp_path: Path) -> None:
    schema = OutputSchema(schema={"type": "array"}, path=tmp_path / "schema.json")
    value, problem = schema.check(DEEP_LIST)
    assert value is None
    assert problem == (
        "the answer is not usable JSON "
        f"(the JSON is nested {DEPTH} levels deep, more than the {MAX_JSON_DEPTH} allowed)"
    )


def test_a_deep_mcp_json_starts_nothing_in_one_sentence(tmp_path: Path) -> None:
    raw = ('{"mcpServers": {"x": {"command": "x", "args": ' + DEEP_LIST + "}}}").encode()
    servers, notices = read_project_servers(tmp_path / ".mcp.json", {}, raw=raw)
    assert servers == []
    assert notices == [
        f"{tmp_path / '.mcp.json'} cannot be used (the JSON is nested {DEPTH + 3} levels "
        f"deep, more than the {MAX_JSON_DEPTH} allowed); its MCP servers were not started."
    ]
    assert mcp_loosening(raw) == []


def test_a_deep_devcontainer_json_is_refused(tmp_path: Path) -> None:
    with pytest.raises(JSONLimitError):
        parse_jsonc('{"build": // a comment\n ' + DEEP_LIST + "}")
