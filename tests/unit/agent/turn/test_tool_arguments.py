"""Hostile tool arguments, fuzzed over every registered tool, through the real agent loop.

For every tool a real session offers and every argument in its schema, each
hostile value (NUL bytes, lone surrogates, strings over the cap, wrong JSON
types, absurd and non-finite numbers, out-of-range integers, unknown keys)
is sent by the scripted model. Each must come back as a failed tool result
naming the argument, nothing may happen in the workspace, the events and
the transcript must stay serialisable, and the model's next scripted
response must run: the session goes on.
"""

from __future__ import annotations

import json
import math
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest
from pydantic import BaseModel

from clover_code import protocol as p
from clover_code.agent.permissions.approval import ApprovalRequest, Decision, RefuseApprover
from clover_code.agent.session import Session
from clover_code.agent.transcript import load
from clover_code.config.settings import Settings
from clover_code.engine import events as ev
from clover_code.tools.arguments import (
    COMMAND_LIMIT,
    CONTENT_LIMIT,
    TEXT_LIMIT,
    human_size,
    screen_arguments,
)
from clover_code.tools.base import Tool, ToolContext, ToolKind, ToolResult
from tests.fakes import ScriptedBackend, text_response, tool_response
from tests.sessions import open_session
from tests.unit.agent.turn.test_agent_loop import assert_valid_conversation, of_type

EXPECTED_TOOLS = {
    "read_file",
    "write_file",
    "edit_file",
    "apply_patch",
    "list_files",
    "glob",
    "grep",
    "repo_map",
    "todo",
    "shell",
    "job_output",
    "job_stop",
    "read_output",
    "web_fetch",
    "task",
    "task_result",
    "task_stop",
}

# Values that no argument of any tool may carry, whatever its type.
ALWAYS_HOSTILE: dict[str, Any] = {
    "nul": "src/app\0.py",
    "surrogate": "caf\ud800e",
    "absurd-int": 10**30,
    "negative-absurd-int": -(10**30),
    "nan": math.nan,
    "infinity": math.inf,
}
# Values of the wrong JSON type, by the schema type they do not fit.
WRONG_TYPE: dict[str, dict[str, Any]] = {
    "string": {"int": 7, "float": 1.5, "list": ["a"], "dict": {"a": 1}, "bool": True},
    "integer": {"text": "many", "float": 1.5, "list": [1], "dict": {"a": 1}},
    "number": {"text": "many", "list": [1], "dict": {"a": 1}},
    "boolean": {"text": "many", "int": 7, "list": [True], "dict": {"a": 1}},
    "array": {"text": "many", "int": 7, "dict": {"a": 1}},
}
VALID: dict[str, dict[str, Any]] = {
    "read_file": {"path": "app.py"},
    "write_file": {"path": "new.txt", "content": "hello\n"},
    "edit_file": {"path": "app.py", "old_string": "a - b", "new_string": "a + b"},
    "apply_patch": {
        "patch": "*** Begin Patch\n*** Add File: added.txt\n+hi\n*** End Patch\n",
    },
    "list_files": {"path": "."},
    "glob": {"pattern": "*.py"},
    "grep": {"pattern": "add"},
    "repo_map": {},
    "todo": {"items": [{"text": "fix add", "status": "pending"}]},
    "shell": {"command": "echo hi > shell.txt"},
    "job_output": {"id": "1", "wait_seconds": 1},
    "job_stop": {"id": "1"},
    "read_output": {"id": "call_1"},
    # Hostile variants fail validation before any request; port 9 never answers anyway.
    "web_fetch": {"url": "http://127.0.0.1:9/", "prompt": "install steps"},
    "task": {"description": "look at app.py", "prompt": "What does app.py define?"},
    "task_result": {"task_id": "task-1", "wait_seconds": 0},
    "task_stop": {"task_id": "task-1"},
}


def _types(prop: dict[str, Any]) -> set[str]:
    if "type" in prop:
        return {prop["type"]}
    return {t for option in prop.get("anyOf", []) for t in _types(option)}


def _over_cap(tool: Tool, name: str) -> str:
    limit = tool.argument_limits.get(name, tool.default_argument_limit)
    return "x" * (limit + 1)


def hostile_cases(tool: Tool, base: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any], str]]:
    """(case id, arguments, the argument the error must name) for one tool, each
    case ``base`` (valid arguments) with one argument made hostile."""
    schema = tool.spec().parameters
    for name, prop in schema.get("properties", {}).items():
        types = _types(prop)
        values = dict(ALWAYS_HOSTILE)
        if "string" in types:
            values["over-cap"] = _over_cap(tool, name)
        fits = {"int"} if "integer" in types else set()
        fits |= {"int", "float"} if "number" in types else set()
        for json_type in types:
            values |= {k: v for k, v in WRONG_TYPE.get(json_type, {}).items() if k not in fits}
        if "null" not in types:
            values["null"] = None
        if "integer" in types or "number" in types:
            low = prop.get("minimum", prop.get("exclusiveMinimum"))
            if low is not None:
                values["below-minimum"] = low - 1
            high = prop.get("maximum")
            if high is not None:
                values["above-maximum"] = high + 1
        if "array" in types:
            values["nested-nul"] = _nested(prop, "\0")
            values["nested-surrogate"] = _nested(prop, "\udfff")
        for case, value in values.items():
            yield f"{name}={case}", {**base, name: value}, name
    if tool.Args.model_config.get("extra") != "allow" or not schema.get(
        "additionalProperties", True
    ):
        yield "unknown-key", {**base, "sudo": True}, "sudo"


def _nested(prop: dict[str, Any], bad: str) -> list[Any]:
    """A list whose one element carries ``bad`` in a string (todo items, repo_map focus)."""
    items = prop.get("items", {})
    if "$ref" in items:
        return [{"text": f"step{bad}", "status": "pending"}]
    return [f"a{bad}b"]


async def fuzz_tool(
    session: Session,
    backend: ScriptedBackend,
    events: list[p.Event],
    tool: Tool,
    base: dict[str, Any],
) -> None:
    """Send every hostile case of ``tool`` through the session's turn loop, one turn each."""
    cases = list(hostile_cases(tool, base))
    assert len(cases) >= 8
    for number, (case, arguments, argument) in enumerate(cases):
        backend.responses += [
            tool_response((tool.name, arguments)),
            text_response(f"still here {number}"),
        ]
        mark = len(events)
        finished = await session.run_turn(f"case {case}")
        where = f"{tool.name} {case}"
        assert finished.status == "completed", where
        assert finished.final_text == f"still here {number}", where
        (result,) = of_type(events[mark:], p.ToolCallFinished)
        assert result.status == "error", f"{where}: {result.result[:300]}"
        assert result.result.startswith("error: invalid arguments"), where
        assert f"'{argument}" in result.result or f"{argument}:" in result.result, (
            f"{where}: {result.result[:300]}"
        )
        # The model saw the failure in its next request.
        assert backend.requests[-1].messages[-1]["role"] == "tool", where
        # Every event still serialises (no lone surrogate slipped through).
        for event in events[mark:]:
            json.loads(event.model_dump_json())


def _git_status(repo: Path) -> str:
    return subprocess.run(
        ["git", "status", "--porcelain", "--ignored"], cwd=repo, capture_output=True, text=True
    ).stdout


async def test_every_tool_is_fuzzed(make_settings: Callable[..., Settings], repo: Path) -> None:
    events: list[p.Event] = []
    session = await open_session(
        make_settings(), ScriptedBackend([]), repo, events, approval_mode="full-auto"
    )
    await session.close()
    assert set(session.agent.dispatch.tools) == EXPECTED_TOOLS, (
        "a tool was added or removed: give it valid arguments in VALID so the fuzz covers it"
    )


@pytest.mark.parametrize("tool_name", sorted(EXPECTED_TOOLS))
async def test_hostile_arguments_fail_the_call_and_the_session_goes_on(
    make_settings: Callable[..., Settings], repo: Path, tool_name: str
) -> None:
    events: list[p.Event] = []
    backend = ScriptedBackend([])
    session = await open_session(
        make_settings(tool_retries=1), backend, repo, events, approval_mode="full-auto"
    )
    # Snapshots for undo are not under test here, and cost a git run per turn.
    session.checkpoints = None
    tool = session.agent.dispatch.tools[tool_name]
    before = _git_status(repo)
    try:
        await fuzz_tool(session, backend, events, tool, VALID[tool_name])
    finally:
        await session.close()
    assert _git_status(repo) == before, "a refused call changed the workspace"
    assert not (repo / "shell.txt").exists()
    loaded = load(session.transcript.path)
    assert not loaded.dropped_torn_line
    assert_valid_conversation(loaded.messages)


async def test_the_nul_path_from_the_report_is_one_sentence(
    make_settings: Callable[..., Settings], repo: Path
) -> None:
    events: list[p.Event] = []
    backend = ScriptedBackend(
        [
            tool_response(("read_file", {"path": "app.py\0../../etc/passwd"})),
            text_response("ok"),
        ]
    )
    session = await open_session(make_settings(), backend, repo, events, approval_mode="auto-edit")
    finished = await session.run_turn("read it")
    await session.close()
    assert finished.status == "completed"
    (result,) = of_type(events, p.ToolCallFinished)
    assert result.result == (
        "error: invalid arguments for tool 'read_file': argument 'path' contains a NUL "
        "character (\\0), which no path, command or file text may hold; remove it and call again."
    )
    assert not of_type(events, p.ErrorEvent)


async def test_arguments_that_are_not_an_object_are_refused(
    make_settings: Callable[..., Settings], repo: Path
) -> None:
    events: list[p.Event] = []
    weird: Any = ["app.py"]
    backend = ScriptedBackend(
        [
            [ev.ToolCallEnd(0, "c1", "read_file", weird), ev.Finished("tool_calls")],
            text_response("ok"),
        ]
    )
    session = await open_session(make_settings(), backend, repo, events, approval_mode="full-auto")
    finished = await session.run_turn("go")
    await session.close()
    assert finished.status == "completed"
    (result,) = of_type(events, p.ToolCallFinished)
    assert "JSON list, not an object" in result.result


async def test_a_huge_argument_is_not_recorded_whole(
    make_settings: Callable[..., Settings], repo: Path
) -> None:
    events: list[p.Event] = []
    huge = "y" * (CONTENT_LIMIT * 3)
    backend = ScriptedBackend(
        [tool_response(("write_file", {"path": "big.txt", "content": huge})), text_response("ok")]
    )
    session = await open_session(make_settings(), backend, repo, events, approval_mode="full-auto")
    await session.run_turn("go")
    await session.close()
    (result,) = of_type(events, p.ToolCallFinished)
    assert "argument 'content' is 3.0 MB long, over its limit of 1.0 MB" in result.result
    assert not (repo / "big.txt").exists()
    assert session.transcript.path.stat().st_size < CONTENT_LIMIT


# --- unexpected exceptions from a tool or from the approval step -----------------------------


class _BoomArgs(BaseModel):
    path: str


class _BoomTool(Tool[_BoomArgs]):
    """A tool with a bug: it raises what no tool should."""

    name: ClassVar[str] = "boom"
    description: ClassVar[str] = "fails"
    kind: ClassVar[ToolKind] = "edit"
    Args = _BoomArgs

    async def run(self, args: _BoomArgs, ctx: ToolContext) -> ToolResult:
        raise ValueError("embedded null byte")


class _BrokenApprover:
    shows_diff = False

    async def request(self, request: ApprovalRequest) -> Decision:
        raise RuntimeError("the dialog went away")


@pytest.mark.parametrize("stage", ["run", "approval"])
async def test_an_unexpected_exception_fails_the_call_not_the_session(
    make_settings: Callable[..., Settings], repo: Path, stage: str
) -> None:
    events: list[p.Event] = []
    backend = ScriptedBackend(
        [
            tool_response(("boom", {"path": "x"})),
            tool_response(("read_file", {"path": "app.py"})),
            text_response("recovered"),
        ]
    )
    approver = _BrokenApprover() if stage == "approval" else RefuseApprover()
    mode = "ask" if stage == "approval" else "full-auto"
    session = await open_session(
        make_settings(), backend, repo, events, approver=approver, approval_mode=mode
    )
    session.agent.dispatch.tools["boom"] = _BoomTool()
    finished = await session.run_turn("go")
    await session.close()
    assert finished.status == "completed" and finished.final_text == "recovered"
    boom, read = of_type(events, p.ToolCallFinished)
    detail = "ValueError: embedded null byte" if stage == "run" else "RuntimeError: the dialog"
    assert boom.status == "error" and detail in boom.result
    assert boom.result.startswith("error: the 'boom' call failed unexpectedly (")
    (error,) = of_type(events, p.ErrorEvent)
    assert detail in error.message and not error.fatal
    assert read.status == "ok"
    assert_valid_conversation(load(session.transcript.path).messages)


# --- the screen itself ---------------------------------------------------------------------


def test_screen_keeps_valid_arguments_as_they_are() -> None:
    arguments = {"path": "a/b.py", "offset": 3, "items": [{"text": "x"}], "t": 1.5, "f": None}
    screened = screen_arguments(arguments, limits={})
    assert screened.problem is None and screened.arguments == arguments


def test_screen_caps_are_stated_in_bytes() -> None:
    accent = "é" * (TEXT_LIMIT // 2 + 1)  # two bytes each: over the cap in bytes, not in chars
    screened = screen_arguments({"path": accent}, limits={})
    assert screened.problem is not None and "over its limit of 4.1 kB" in screened.problem
    assert len(screened.arguments["path"]) < 300
    command = screen_arguments({"command": "x" * COMMAND_LIMIT}, limits={"command": COMMAND_LIMIT})
    assert command.problem is None


def test_screen_makes_a_recordable_copy() -> None:
    screened = screen_arguments({"a": "x\ud800y", "b": math.nan, "c": [math.inf]}, limits={})
    assert screened.arguments == {"a": "x?y", "b": None, "c": [None]}
    json.dumps(screened.arguments, allow_nan=False).encode("utf-8")


def test_human_size() -> None:
    assert human_size(1) == "1 byte"
    assert human_size(999) == "999 bytes"
    assert human_size(1000) == "1.0 kB"
    assert human_size(512_345_678) == "512.3 MB"
    assert human_size(999_960_000) == "1.0 GB"
    assert human_size(3 * 10**15) == "3000.0 TB"


async def test_a_name_too_long_for_the_file_system_is_a_plain_refusal(
    make_settings: Callable[..., Settings], repo: Path
) -> None:
    name = "n" * 300  # under the 4 kB argument cap, over the 255-byte file name limit
    calls = [
        ("read_file", {"path": name}),
        ("write_file", {"path": f"dir/{name}", "content": "x"}),
        ("edit_file", {"path": name, "old_string": "a", "new_string": "b"}),
        ("apply_patch", {"patch": f"*** Begin Patch\n*** Add File: {name}\n+hi\n*** End Patch\n"}),
        ("list_files", {"path": name}),
        ("glob", {"pattern": "*", "path": name}),
        ("grep", {"pattern": "x", "path": name}),
    ]
    events: list[p.Event] = []
    backend = ScriptedBackend([tool_response(*calls), text_response("ok")])
    session = await open_session(make_settings(), backend, repo, events, approval_mode="full-auto")
    finished = await session.run_turn("go")
    await session.close()
    assert finished.status == "completed"
    results = of_type(events, p.ToolCallFinished)
    assert len(results) == len(calls)
    for result in results:
        assert result.status == "error"
        assert "has a name longer than 255 bytes" in result.result, result.result[:200]
    assert not of_type(events, p.ErrorEvent)  # a refusal, not a bug
