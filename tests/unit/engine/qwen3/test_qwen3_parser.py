"""The streaming Qwen3 output parser: reasoning, content and qwen3_coder tool calls.

Every response is fed in several chunkings (whole, one character at a time,
32-character blocks, seeded random cuts, every two-way split) and the merged
result must not depend on where the cuts fall.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest

from clover_code.engine.base import ToolSpec
from clover_code.engine.events import (
    ContentDelta,
    EngineEvent,
    ReasoningDelta,
    ToolCallArgs,
    ToolCallEnd,
    ToolCallStart,
)
from clover_code.engine.qwen3.parser import _HANDLERS, ParserState, Qwen3StreamParser
from clover_code.engine.qwen3.schema_values import convert_value, property_types
from clover_code.engine.qwen3.tags import _ALL_TAGS


def _tool(name: str, **properties: dict[str, Any]) -> ToolSpec:
    return ToolSpec(name, f"the {name} tool", {"type": "object", "properties": properties})


TOOLS = [
    _tool("read_file", path={"type": "string"}, limit={"type": ["integer", "null"]}),
    _tool("shell", command={"type": "string"}, timeout={"type": "number"}),
    _tool(
        "write_file",
        path={"type": "string"},
        content={"type": "string"},
        overwrite={"type": "boolean"},
    ),
    _tool(
        "edit",
        options={"type": "object"},
        paths={"type": "array", "items": {"type": "string"}},
        line={"anyOf": [{"type": "integer"}, {"type": "null"}]},
        anything={"description": "no type given"},
    ),
]

# The shape SGLang hands back for a Qwen3.x response with thinking and two calls.
CODE = 'def f(a, b):\n    if a < b:\n\n        return "<x>"\n    return b\n'
FULL_RESPONSE = (
    "The user wants the file. Check a < b first.\n"
    "Plan: read, then list.\n"
    "</think>\n\n"
    "I'll read the file and list the directory.\n\n"
    "<tool_call>\n<function=read_file>\n<parameter=path>\nsrc/app.py\n</parameter>\n"
    "<parameter=limit>\n40\n</parameter>\n</function>\n</tool_call>\n"
    "<tool_call>\n<function=write_file>\n<parameter=path>\nsrc/f.py\n</parameter>\n"
    f"<parameter=content>\n{CODE}\n</parameter>\n<parameter=overwrite>\nTrue\n</parameter>\n"
    "</function>\n</tool_call>"
    "<|im_end|>this text after the stop token is never shown"
)


@dataclass
class Merged:
    """The parser's output with chunk boundaries merged away."""

    reasoning: str = ""
    content: str = ""
    calls: list[tuple[int, str, dict[str, Any], str | None]] = field(default_factory=list)
    order: list[str] = field(default_factory=list)  # segment kinds, repeats collapsed


def merge(events: Iterable[EngineEvent]) -> Merged:
    """Concatenate text, check each call's event sequence, and list the ended calls."""
    merged = Merged()
    open_calls: dict[int, tuple[str, str, list[str]]] = {}
    for event in events:
        if isinstance(event, ReasoningDelta):
            assert event.text, "empty reasoning delta"
            merged.reasoning += event.text
            kind = "reasoning"
        elif isinstance(event, ContentDelta):
            assert event.text, "empty content delta"
            merged.content += event.text
            kind = "content"
        elif isinstance(event, ToolCallStart):
            assert event.index not in open_calls
            assert event.index == len(merged.calls), "indexes count from 0 in order"
            assert re.fullmatch(r"call_[0-9a-f]{8}", event.id)
            open_calls[event.index] = (event.id, event.name, [])
            kind = "call"
        elif isinstance(event, ToolCallArgs):
            open_calls[event.index][2].append(event.delta)
            kind = "call"
        elif isinstance(event, ToolCallEnd):
            call_id, name, deltas = open_calls.pop(event.index)
            assert (event.id, event.name) == (call_id, name)
            # The fragments, joined, are the JSON of the final arguments.
            assert json.loads("".join(deltas)) == event.arguments
            merged.calls.append((event.index, event.name, event.arguments, event.error))
            kind = "call"
        else:  # pragma: no cover - a failure path
            raise AssertionError(f"unexpected event {event!r}")
        # One entry per call, one per run of text.
        if isinstance(event, ToolCallStart) or (kind != "call" and merged.order[-1:] != [kind]):
            merged.order.append(kind)
    assert not open_calls, f"calls never ended: {open_calls}"
    return merged


def run(
    chunks: Iterable[str], tools: Sequence[ToolSpec] = TOOLS, *, starts_in_reasoning: bool = True
) -> Merged:
    parser = Qwen3StreamParser(tools, starts_in_reasoning=starts_in_reasoning)
    events: list[EngineEvent] = []
    for chunk in chunks:
        events += parser.feed(chunk)
    events += parser.finish()
    assert parser.finish() == []
    return merge(events)


def whole(text: str) -> list[str]:
    return [text]


def by_char(text: str) -> list[str]:
    return list(text)


def blocks(size: int) -> Callable[[str], list[str]]:
    def cut(text: str) -> list[str]:
        return [text[i : i + size] for i in range(0, len(text), size)]

    return cut


def randomly(seed: int) -> Callable[[str], list[str]]:
    def cut(text: str) -> list[str]:
        rng = random.Random(seed)
        pieces, at = [], 0
        while at < len(text):
            step = rng.choice((1, 1, 2, 3, 5, 8, 13, 40))
            pieces.append(text[at : at + step])
            at += step
        return pieces

    return cut


CHUNKINGS = [whole, by_char, blocks(32), blocks(7), *(randomly(seed) for seed in range(5))]
CHUNKING_IDS = ["whole", "by_char", "block32", "block7", *(f"random{s}" for s in range(5))]


def each_chunking(text: str, **kwargs: Any) -> Merged:
    """Run ``text`` through every chunking and every two-way split; all must agree."""
    expected = run([text], **kwargs)
    for chunking in CHUNKINGS:
        assert run(chunking(text), **kwargs) == expected, chunking
    for at in range(1, len(text)):
        assert run([text[:at], text[at:]], **kwargs) == expected, f"split at {at}"
    return expected


# -- the recorded shape --------------------------------------------------------


@pytest.mark.parametrize("chunking", CHUNKINGS, ids=CHUNKING_IDS)
def test_full_response_parses_the_same_in_any_chunking(
    chunking: Callable[[str], list[str]],
) -> None:
    merged = run(chunking(FULL_RESPONSE))

    assert merged.reasoning == "The user wants the file. Check a < b first.\nPlan: read, then list."
    assert merged.content == "I'll read the file and list the directory."
    assert merged.calls == [
        (0, "read_file", {"path": "src/app.py", "limit": 40}, None),
        (1, "write_file", {"path": "src/f.py", "content": CODE, "overwrite": True}, None),
    ]
    assert merged.order == ["reasoning", "content", "call", "call"]


def test_full_response_every_two_way_split_agrees() -> None:
    each_chunking(FULL_RESPONSE)


def test_text_streams_before_the_response_ends() -> None:
    parser = Qwen3StreamParser(TOOLS)

    assert parser.feed("Let me think") == [ReasoningDelta("Let me think")]
    # A possible "</think>" is held back, then resolved.
    assert parser.feed(" more </thi") == [ReasoningDelta(" more")]
    assert parser.feed("nk>\n\nThe answer") == [ContentDelta("The answer")]
    assert parser.feed(" is <tool") == [ContentDelta(" is")]
    assert parser.feed("box>") == [ContentDelta(" <toolbox>")]
    assert parser.finish() == []


def test_tool_call_start_comes_as_soon_as_the_name_is_complete() -> None:
    parser = Qwen3StreamParser(TOOLS, starts_in_reasoning=False)
    assert parser.feed("<tool_call>\n<function=shell") == []
    assert not parser.saw_tool_call

    events = parser.feed(">\n<parameter=command>\nls")
    assert [type(e) for e in events] == [ToolCallStart]
    assert parser.saw_tool_call

    # A parameter is settled once the tag after its </parameter> shows it was real.
    assert parser.feed("\n</parameter>\n") == []
    assert parser.feed("<param") == []
    assert parser.feed("eter=") == [ToolCallArgs(0, '{"command": "ls"')]


# -- stop tokens and the edges of the stream -----------------------------------


@pytest.mark.parametrize("stop", ["<|im_end|>", "<|endoftext|>"])
def test_text_after_a_stop_token_is_ignored_even_mid_block(stop: str) -> None:
    text = "short\n</think>\n\nDone." + stop + "<tool_call>\n<function=shell>\n" + "x" * 40

    merged = each_chunking(text)

    assert (merged.reasoning, merged.content, merged.calls) == ("short", "Done.", [])


def test_feed_after_the_stop_token_returns_nothing() -> None:
    parser = Qwen3StreamParser(TOOLS, starts_in_reasoning=False)

    assert parser.feed("Hi<|im_") == [ContentDelta("Hi")]
    assert parser.feed("end|>tail") == []
    assert parser.feed("more") == []
    assert parser.finish() == []


def test_short_first_block() -> None:
    parser = Qwen3StreamParser(TOOLS)
    events = parser.feed("<")  # could be "<think>": nothing yet
    events += parser.feed("b")
    events += parser.feed(">bold</b> text</think>ok")
    events += parser.finish()

    assert merge(events) == Merged("<b>bold</b> text", "ok", [], ["reasoning", "content"])


def test_reasoning_only_output() -> None:
    merged = each_chunking("Still thinking when the budget ran out, a < b\n")

    assert merged.reasoning == "Still thinking when the budget ran out, a < b"
    assert (merged.content, merged.calls) == ("", [])


def test_no_think_output() -> None:
    merged = each_chunking("Hello! x < y and <b>z</b>.\n", starts_in_reasoning=False)

    assert merged == Merged("", "Hello! x < y and <b>z</b>.", [], ["content"])


def test_no_think_mode_reads_a_leading_think_section() -> None:
    text = "\n<think>\nquick thought\n</think>\n\nAnswer <think> stays text."

    merged = each_chunking(text, starts_in_reasoning=False)

    assert (merged.reasoning, merged.content) == ("quick thought", "Answer <think> stays text.")


@pytest.mark.parametrize("prefix", ["<think>\n", "  \n<think>", "<think>"])
def test_a_repeated_think_tag_at_the_start_is_swallowed(prefix: str) -> None:
    merged = each_chunking(prefix + "hmm\n</think>\n\nHi")

    assert (merged.reasoning, merged.content) == ("hmm", "Hi")


def test_a_tag_that_only_looks_like_think_is_reasoning_text() -> None:
    merged = each_chunking("<thinking> is not a tag</think>x")

    assert (merged.reasoning, merged.content) == ("<thinking> is not a tag", "x")


def test_a_lone_angle_bracket_passes_through() -> None:
    for text in ["a < b", "a <", "<", "if x <tool and y", "<|im_start|> is literal here"]:
        merged = each_chunking(text, starts_in_reasoning=False)
        assert merged.content == text.strip()


def test_inner_whitespace_of_content_is_kept() -> None:
    text = "</think>\n\nLine one.\n\n  Indented line two.\n"

    assert each_chunking(text).content == "Line one.\n\n  Indented line two."


# -- tool calls ----------------------------------------------------------------


def call_text(params: dict[str, str], function: str = "edit") -> str:
    """One well-formed qwen3_coder call."""
    body = "".join(f"<parameter={k}>\n{v}\n</parameter>\n" for k, v in params.items())
    return f"<tool_call>\n<function={function}>\n{body}</function>\n</tool_call>"


def test_content_then_two_tool_calls_with_whitespace_between() -> None:
    text = (
        "Running both.\n\n<tool_call>\n<function=shell>\n<parameter=command>\nls\n</parameter>\n"
        "</function>\n</tool_call>\n\n  \n<tool_call>\n<function=shell>\n<parameter=command>\n"
        "pwd\n</parameter>\n<parameter=timeout>\n2.5\n</parameter>\n</function>\n</tool_call>\n"
    )

    merged = each_chunking(text, starts_in_reasoning=False)

    assert merged.content == "Running both."
    assert merged.calls == [
        (0, "shell", {"command": "ls"}, None),
        (1, "shell", {"command": "pwd", "timeout": 2.5}, None),
    ]
    assert merged.order == ["content", "call", "call"]


def test_content_between_and_after_calls() -> None:
    call = "<tool_call>\n<function=shell>\n</function>\n</tool_call>"
    text = f"{call}\nThen:\n{call}\n\nDone.\n"

    merged = each_chunking(text, starts_in_reasoning=False)

    assert merged.content == "Then:Done."  # each run trimmed at its edges
    assert merged.order == ["call", "content", "call", "content"]
    assert merged.calls == [(0, "shell", {}, None), (1, "shell", {}, None)]


def test_multi_line_code_value_keeps_its_indentation_exactly() -> None:
    code = "\n\n    def f():\n\treturn  1  \n\n"  # blank edges and tabs are part of the value
    text = (
        "<tool_call>\n<function=write_file>\n<parameter=path>\nf.py\n</parameter>\n"
        f"<parameter=content>\n{code}\n</parameter>\n</function>\n</tool_call>"
    )

    merged = each_chunking(text, starts_in_reasoning=False)

    assert merged.calls == [(0, "write_file", {"path": "f.py", "content": code}, None)]


def test_a_close_parameter_tag_inside_a_value_is_kept_when_not_followed_by_a_tag() -> None:
    code = 'TAG = "</parameter>"\nprint(TAG)'
    text = (
        "<tool_call>\n<function=write_file>\n<parameter=content>\n"
        f"{code}\n</parameter>\n</function>\n</tool_call>"
    )

    merged = each_chunking(text, starts_in_reasoning=False)

    assert merged.calls == [(0, "write_file", {"content": code}, None)]


def test_several_functions_in_one_tool_call_block() -> None:
    text = (
        "<tool_call>\n<function=shell>\n<parameter=command>\nls\n</parameter>\n</function>\n"
        "<function=read_file>\n<parameter=path>\na\n</parameter>\n</function>\n</tool_call>"
    )

    merged = each_chunking(text, starts_in_reasoning=False)

    assert [(name, args) for _, name, args, _ in merged.calls] == [
        ("shell", {"command": "ls"}),
        ("read_file", {"path": "a"}),
    ]


def test_missing_close_tool_call_then_text() -> None:
    text = "<tool_call>\n<function=shell>\n</function>\nAnd some words."

    merged = each_chunking(text, starts_in_reasoning=False)

    assert merged.calls == [(0, "shell", {}, None)]
    assert merged.content == "And some words."


def test_json_form_inside_tool_call_is_read_too() -> None:
    text = '<tool_call>\n{"name": "shell", "arguments": {"command": "ls -l"}}\n</tool_call>'

    merged = each_chunking(text, starts_in_reasoning=False)

    assert merged.calls == [(0, "shell", {"command": "ls -l"}, None)]
    assert merged.content == ""


def test_unknown_function_still_starts_and_ends_with_an_error() -> None:
    text = call_text({"path": "/"}, "rm_rf")

    merged = each_chunking(text, starts_in_reasoning=False)

    error = "unknown tool 'rm_rf'; available: read_file, shell, write_file, edit"
    assert merged.calls == [(0, "rm_rf", {"path": "/"}, error)]


def test_without_tools_any_name_is_accepted_and_values_are_strings() -> None:
    text = call_text({"n": "3"}, "anything")

    merged = run([text], tools=[], starts_in_reasoning=False)

    assert merged.calls == [(0, "anything", {"n": "3"}, None)]


def test_call_ids_are_unique() -> None:
    call = "<tool_call>\n<function=shell>\n</function>\n</tool_call>\n"
    parser = Qwen3StreamParser(TOOLS, starts_in_reasoning=False)
    events = parser.feed(call * 300) + parser.finish()
    other = Qwen3StreamParser(TOOLS, starts_in_reasoning=False)
    events += other.feed(call * 300) + other.finish()

    ids = [e.id for e in events if isinstance(e, ToolCallStart)]
    assert len(ids) == 600
    assert len(set(ids)) == 600


# -- schema conversion -----------------------------------------------------------


def test_values_are_converted_by_the_schema() -> None:
    text = call_text(
        {
            "options": '{"dry_run": true, "depth": 2}',
            "paths": '["a.py", "b.py"]',
            "line": "null",
            "anything": "[1, 2]",
            "extra": "  not in the schema  ",
        }
    ) + call_text({"path": "x", "limit": "None"}, "read_file")

    merged = each_chunking(text, starts_in_reasoning=False)

    assert merged.calls == [
        (
            0,
            "edit",
            {
                "options": {"dry_run": True, "depth": 2},
                "paths": ["a.py", "b.py"],
                "line": None,
                "anything": [1, 2],
                "extra": "  not in the schema  ",
            },
            None,
        ),
        (1, "read_file", {"path": "x", "limit": None}, None),
    ]


@pytest.mark.parametrize(
    ("function", "params", "error"),
    [
        ("read_file", {"limit": "abc"}, "expected integer or null, got 'abc'"),
        ("edit", {"line": "4.5"}, "expected integer or null, got '4.5'"),
        ("shell", {"timeout": "soon"}, "expected number, got 'soon'"),
        ("shell", {"timeout": "nan"}, "expected number, got 'nan'"),
        ("write_file", {"overwrite": "yes"}, "expected boolean, got 'yes'"),
        ("edit", {"paths": '{"a": 1}'}, "expected array, got '{\"a\": 1}' (the JSON is an"),
        ("edit", {"options": "{dry_run: true}"}, "expected object, got '{dry_run: true}' (inval"),
    ],
)
def test_a_value_that_does_not_fit_ends_the_call_with_an_error(
    function: str, params: dict[str, str], error: str
) -> None:
    merged = each_chunking(call_text(params, function), starts_in_reasoning=False)

    [(_, name, arguments, message)] = merged.calls
    name_of_param = next(iter(params))
    assert name == function
    assert message is not None
    assert message.startswith(f"parameter '{name_of_param}' of tool '{function}': {error}")
    # The raw text is kept so the error can be shown next to what was sent.
    assert arguments == params


@pytest.mark.parametrize(
    ("schema", "raw", "value"),
    [
        ({"type": "integer"}, "\n3\n", 3),
        ({"type": "integer"}, " -7 ", -7),
        ({"type": "integer"}, "3.0", 3),
        ({"type": "number"}, "3", 3),
        ({"type": "number"}, "3.0", 3.0),
        ({"type": "number"}, "-1e3", -1000.0),
        ({"type": "boolean"}, "TRUE", True),
        ({"type": "boolean"}, "False", False),
        ({"type": ["integer", "null"]}, "None", None),
        ({"type": ["string", "null"]}, "null", None),
        ({"type": ["string", "null"]}, "\nnull pointer\n", "null pointer"),
        ({"oneOf": [{"type": "boolean"}, {"type": "string"}]}, "maybe", "maybe"),
        ({"type": "string"}, "\n\nx\n\n", "\nx\n"),
        ({"type": "string"}, "\n42\n", "42"),
        ({}, '\n{"a": [1]}\n', {"a": [1]}),
        ({}, "\nplain words\n", "plain words"),
    ],
)
def test_convert_value(schema: dict[str, Any], raw: str, value: Any) -> None:
    converted = convert_value(raw, property_types(schema))

    assert converted == value
    assert type(converted) is type(value)


def test_convert_value_outside_the_schema_keeps_the_text() -> None:
    assert convert_value("\n 3 \n", None) == " 3 "


# -- malformed markup ----------------------------------------------------------


def test_tool_call_tag_without_a_function_is_content() -> None:
    text = "See <tool_call>\nnot a call\n</tool_call> there."

    merged = each_chunking(text, starts_in_reasoning=False)

    assert merged.content == text
    assert merged.calls == []


@pytest.mark.parametrize(
    "text",
    [
        "Now: <tool_call>",
        "Now: <tool_call>\n<function=",
        "Now: <tool_call>\n<function=shell",
        "Now: <tool_call>\n<function=>\n</function>\n</tool_call>",
        'Now: <tool_call>\n{"name": "shell", "arguments": [1]}\n</tool_call>',
    ],
)
def test_a_call_that_never_names_a_function_comes_back_as_content(text: str) -> None:
    merged = each_chunking(text, starts_in_reasoning=False)

    assert merged.content == text
    assert merged.calls == []


def test_a_call_cut_off_inside_a_parameter_ends_with_an_error() -> None:
    text = (
        "<tool_call>\n<function=write_file>\n<parameter=path>\na.py\n</parameter>\n"
        "<parameter=content>\nprint('hal"
    )

    merged = each_chunking(text, starts_in_reasoning=False)

    [(_, name, arguments, error)] = merged.calls
    assert (name, arguments) == ("write_file", {"path": "a.py"})
    assert error is not None
    assert error.startswith("tool call 'write_file' was cut off inside parameter 'content'")


@pytest.mark.parametrize(
    "tail",
    ["", "\n<parameter=path>\nx\n</parameter>\n", "\n<parameter=pa", "\n</func", "<|im_end|>"],
)
def test_a_call_cut_off_before_its_close_tag_ends_with_an_error(tail: str) -> None:
    merged = each_chunking("<tool_call>\n<function=read_file>" + tail, starts_in_reasoning=False)

    [(_, name, _, error)] = merged.calls
    assert name == "read_file"
    assert error is not None
    assert error.startswith("tool call 'read_file' was cut off")


def test_garbage_before_the_first_parameter_is_ignored() -> None:
    text = (
        "<tool_call>\n<function=shell>\nnoise < here\n<parameter=command>\nls\n</parameter>\n"
        "</function>\n</tool_call>"
    )

    merged = each_chunking(text, starts_in_reasoning=False)

    assert merged.calls == [(0, "shell", {"command": "ls"}, None)]


def test_text_after_a_close_parameter_tag_makes_the_tag_part_of_the_value() -> None:
    # The rule that keeps "</parameter>" inside code values: a close tag
    # counts only when a tag (or the end) follows it.
    text = (
        "<tool_call>\n<function=shell>\n<parameter=command>\nls\n</parameter>\n"
        "more noise\n</function>\n</tool_call>"
    )

    merged = each_chunking(text, starts_in_reasoning=False)

    [(_, _, arguments, error)] = merged.calls
    assert arguments == {}
    assert error is not None
    assert error.startswith("tool call 'shell' was cut off inside parameter 'command'")


def test_a_malformed_parameter_tag_is_an_error() -> None:
    text = call_text({"": "ls"}, "shell")

    merged = each_chunking(text, starts_in_reasoning=False)

    assert merged.calls == [
        (0, "shell", {}, "tool call 'shell' has a malformed <parameter=...> tag")
    ]


def test_an_overlong_function_name_is_not_a_tag() -> None:
    text = "<tool_call>\n<function=" + "x" * 300 + ">\n</function>\n</tool_call>"

    merged = each_chunking(text, starts_in_reasoning=False)

    assert (merged.content, merged.calls) == (text, [])


@pytest.mark.parametrize("starts_in_reasoning", [True, False])
def test_random_fragments_never_raise_and_do_not_depend_on_chunking(
    starts_in_reasoning: bool,
) -> None:
    fragments = [
        "<tool_call>", "</tool_call>", "<function=shell>", "<function=", "</function>",
        "<parameter=command>", "<parameter=", "</parameter>", "<think>", "</think>",
        "\n", " ", "ls", "a < b", "<", ">", "{", '{"name": "shell"}', "<|im_end|>", "<|im",
    ]  # fmt: skip
    rng = random.Random(7)
    for _ in range(150):
        text = "".join(rng.choice(fragments) for _ in range(rng.randint(1, 25)))
        # merge() inside checks that every call's events are consistent.
        each_chunking(text, starts_in_reasoning=starts_in_reasoning)


def test_every_state_has_a_handler() -> None:
    assert set(_HANDLERS) == set(ParserState)
    assert all(callable(handler) for handler in _HANDLERS.values())


def test_every_tag_has_its_only_lt_sign_first() -> None:
    # _release_end looks at a single candidate suffix: the last "<".
    assert all(tag.count("<") == 1 and tag[0] == "<" for tag in _ALL_TAGS)
