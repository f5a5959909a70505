"""The SDK against the scripted model server: approvals answered by a callback,
custom tools judged by their kind, a turn interrupted, a session resumed, and
every refusal raised as the project's errors or returned as a result."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from clover_code import protocol as p
from clover_code import sdk
from clover_code.errors import CloverError, ConfigError, UsageError
from tests.integration.sdk_model import failing_project, model
from tests.integration.sse_server import ScriptedServer, sse_response
from tests.integration.stream_shapes import SGLangStream
from tests.waiting import within

pytestmark = pytest.mark.integration

BUGGY = "def add(a, b):\n    return a - b\n"


class City(BaseModel):
    city: str


@pytest.fixture
def server(scripted_server: ScriptedServer) -> ScriptedServer:
    scripted_server.responder = model  # type: ignore[assignment]
    return scripted_server


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return failing_project(tmp_path)


def options(server: ScriptedServer, project: Path, **more: Any) -> dict[str, Any]:
    return {"cwd": project, "base_url": server.base_url, "repo_map_tokens": 0, **more}


async def test_a_denial_reaches_the_model_and_changes_nothing(
    server: ScriptedServer, project: Path
) -> None:
    calls: list[sdk.ToolCall] = []

    async def refuse(call: sdk.ToolCall) -> sdk.Deny:
        calls.append(call)
        return sdk.Deny("edits wait for the review")

    result = await sdk.arun("Fix the failing test", can_use_tool=refuse, **options(server, project))
    assert result.status == "success" and result.files_changed == []
    (call,) = calls
    assert (call.name, call.kind, call.arguments["path"]) == ("edit_file", "edit", "calc.py")
    assert call.diff is not None and "+    return a + b" in call.diff
    assert (project / "calc.py").read_text() == BUGGY
    tool_result = [m for m in server.chat_requests[-1].json()["messages"] if m["role"] == "tool"]
    assert "denied: edits wait for the review" in tool_result[0]["content"]


async def test_a_callback_that_fails_refuses_the_call(
    server: ScriptedServer, project: Path
) -> None:
    def broken(call: sdk.ToolCall) -> sdk.Allow:
        raise LookupError("no reviewer on duty")

    async with sdk.Session(can_use_tool=broken, **options(server, project)) as session:
        finished = [e async for e in session.send("Fix the failing test")]
    edit = next(e for e in finished if isinstance(e, p.ToolCallFinished))
    assert edit.status == "denied"
    assert "the approval callback raised LookupError: no reviewer on duty" in edit.result
    assert (project / "calc.py").read_text() == BUGGY


async def test_an_execute_tool_asks_and_headless_refuses_it(
    server: ScriptedServer, project: Path
) -> None:
    ran: list[str] = []

    @sdk.tool  # kind execute: host code no sandbox contains
    def weather(args: City) -> str:
        """Today's weather in a city."""
        ran.append(args.city)
        return f"rain in {args.city}"

    task = "What is the weather in Paris? Then clean up the build folder."
    # No callback: sandbox-auto, as headless; asking refuses (the sandbox contains no
    # Python function of this process).
    refused = await sdk.arun(task, tools=[weather], **options(server, project))
    assert ran == []
    assert "weather needs approval, which headless mode cannot ask for" in refused.result
    asked: list[str] = []

    def allow(call: sdk.ToolCall) -> sdk.Allow | sdk.Deny:
        asked.append(call.name)
        return sdk.Allow() if call.name == "weather" else sdk.Deny("no shell")

    allowed = await sdk.arun(task, tools=[weather], can_use_tool=allow, **options(server, project))
    assert ran == ["Paris"] and asked == ["weather", "shell"]
    assert allowed.result.startswith("rain in Paris. The build folder stays: denied: no shell")


async def test_interrupt_ends_the_turn_and_the_session_goes_on(
    server: ScriptedServer, project: Path
) -> None:
    server.responder = None  # type: ignore[assignment]
    server.enqueue(sse_response(SGLangStream().content("One, ").chunks(), hold=True))
    async with sdk.Session(**options(server, project)) as session:
        seen: list[p.Event] = []
        async for event in session.send("Count to ten slowly"):
            seen.append(event)
            if isinstance(event, p.ContentDelta):
                with pytest.raises(UsageError, match="a turn is still running"):
                    await anext(session.send("again"))
                await within(session.interrupt(), message="the interrupted turn to end")
        finished = seen[-1]
        assert isinstance(finished, p.TurnFinished) and finished.status == "interrupted"
        assert finished.op_id is not None and all(e.op_id == finished.op_id for e in seen)
        server.responder = model  # type: ignore[assignment]
        after = [e async for e in session.send("Say hello")]
        assert isinstance(after[-1], p.TurnFinished) and after[-1].status == "completed"


async def test_a_session_resumes_by_id(server: ScriptedServer, project: Path) -> None:
    async with sdk.Session(**options(server, project)) as first:
        assert first.started is not None and first.started.cwd == str(project)
        [e async for e in first.send("Say hello")]
        session_id = first.id
    async with sdk.Session(resume=session_id, **options(server, project)) as again:
        assert again.id == session_id and again.started is not None and again.started.resumed
        [e async for e in again.send("Say hello again")]
    prompts = [
        m["content"] for m in server.chat_requests[-1].json()["messages"] if m["role"] == "user"
    ]
    assert prompts == ["Say hello", "Say hello again"]


async def test_refusals_are_the_projects_errors(
    server: ScriptedServer,
    project: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    managed = tmp_path / "managed.toml"
    managed.write_text('[limits]\nmax_approval = "auto-edit"\ndisabled = ["hooks"]\n')
    monkeypatch.setenv("CLOVER_MANAGED_SETTINGS", str(managed))
    async with sdk.Session(**options(server, project)) as session:
        with pytest.raises(ConfigError, match="is set by your administrator"):
            await session.set_approval_mode("full-auto")
        assert session.approval_mode == "auto-edit"  # headless's default, held to the ceiling
        await session.set_approval_mode("plan")
        assert session.approval_mode == "plan"
        with pytest.raises(UsageError, match="'yolo' is not an approval mode"):
            await session.set_approval_mode("yolo")  # type: ignore[arg-type]
        with pytest.raises(CloverError) as refused:
            await session.undo()
        assert (
            str(refused.value) == "cannot undo 1 turn(s): 0 turn(s) of this session can be undone."
        )
    hooks = {"Stop": lambda data: None}
    with pytest.raises(ConfigError, match="the program's hook functions are refused because"):
        async with sdk.Session(hooks=hooks, **options(server, project)):
            pass


async def test_a_tool_may_not_take_a_built_in_name(server: ScriptedServer, project: Path) -> None:
    @sdk.tool(name="read_file", kind="read")
    def mine(args: City) -> str:
        """Mine."""
        return ""

    with pytest.raises(ConfigError, match="the tool name 'read_file' is taken"):
        async with sdk.Session(tools=[mine], **options(server, project)):
            pass
    result = await sdk.arun("Say hello", tools=[mine], **options(server, project))
    assert (result.status, result.exit_code) == ("error", 2)
    assert result.error is not None and "the tool name 'read_file' is taken" in result.error


async def test_what_happens_after_the_options_is_a_result(
    project: Path, closed_port_url: str
) -> None:
    result = await sdk.arun("Say hello", cwd=project, base_url=closed_port_url)
    assert (result.status, result.exit_code, result.exit_reason) == ("error", 3, "no_engine")
    assert result.error is not None and closed_port_url.split("/v1")[0] in result.error
    with pytest.raises(UsageError, match="cannot run inside an event loop; use await"):
        sdk.run("Say hello", cwd=project, base_url=closed_port_url)
    with pytest.raises(UsageError, match="the task is empty"):
        await sdk.arun("  ", cwd=project)


def test_run_blocks_outside_a_loop(project: Path, closed_port_url: str) -> None:
    result = sdk.run("Say hello", cwd=project, base_url=closed_port_url)
    assert isinstance(result, sdk.TaskResult) and result.exit_code == 3


async def test_undo_between_turns(server: ScriptedServer, project: Path) -> None:
    async with sdk.Session(approval="auto-edit", **options(server, project)) as session:
        [e async for e in session.send("Fix the failing test")]
        assert (project / "calc.py").read_text() != BUGGY
        done = await session.undo()
        assert done is not None and done.files == ["calc.py"] and done.forgotten
        assert (project / "calc.py").read_text() == BUGGY
        with pytest.raises(CloverError) as refused:
            await session.undo(what="conversation")
        assert str(refused.value) == (
            "cannot rewind 1 turn(s): the conversation holds fewer (or was compacted or "
            "cleared since)."
        )
