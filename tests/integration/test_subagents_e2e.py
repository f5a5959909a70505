"""End to end: the real `clover-code --task` starting child agents against a scripted server.

The server answers by who is asking: the parent (its first user message is the
task) or a child (its first user message is the prompt the parent gave the
``task`` call). Child answers can wait until both children's requests are in
flight, so the concurrency test cannot pass by luck.
"""

from __future__ import annotations

import json
import signal
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from clover_code import protocol as p
from clover_code.outcome.result import TaskResult, parse_stream_line
from tests.integration.sse_server import (
    MODELS_PATH,
    RecordedRequest,
    ScriptedResponse,
    ScriptedServer,
    Until,
    error_response,
    json_response,
    sse_response,
)
from tests.integration.stream_shapes import SGLangStream
from tests.integration.test_headless_e2e import clover, run_clover
from tests.waiting import async_wait_until, within

pytestmark = pytest.mark.integration

TASK = "Find out what a.py and b.py define."
Script = Callable[[RecordedRequest, list[dict[str, Any]]], ScriptedResponse]


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    (root / "a.py").write_text("ALPHA = 1\n")
    (root / "b.py").write_text("BETA = 2\n")
    return root


def sglang(build: Callable[[SGLangStream], Any]) -> ScriptedResponse:
    stream = SGLangStream()
    build(stream)
    return sse_response(stream.chunks())


def task_call(name: str, prompt: str, agent: str = "explore") -> tuple[str, dict[str, Any]]:
    return "task", {"description": f"look at {name}", "prompt": prompt, "agent": agent}


def route(server: ScriptedServer, parent: Script, children: dict[str, Script]) -> None:
    """Answer the parent with ``parent`` and each child (by its prompt's tag) with its script."""

    def respond(request: RecordedRequest) -> ScriptedResponse:
        if request.path == MODELS_PATH:
            return json_response({"object": "list", "data": [{"id": "test-model"}]})
        messages = request.json()["messages"]
        first = next(m["content"] for m in messages if m["role"] == "user")
        for tag, script in children.items():
            if first.startswith(tag):
                return script(request, messages)
        return parent(request, messages)

    server.responder = respond


def parent_two_tasks(final: str = "Both looked at.") -> Script:
    def script(request: RecordedRequest, messages: list[dict[str, Any]]) -> ScriptedResponse:
        if not any(m["role"] == "tool" for m in messages):
            return sglang(
                lambda s: (
                    s.tool_call(*task_call("a.py", "CHILD-A: what does a.py define?")),
                    s.tool_call(*task_call("b.py", "CHILD-B: what does b.py define?")),
                )
            )
        return sglang(lambda s: s.content(final))

    return script


def child_reads(path: str, answer: str, wait_for_both: ScriptedServer | None = None) -> Script:
    def script(request: RecordedRequest, messages: list[dict[str, Any]]) -> ScriptedResponse:
        if not any(m["role"] == "tool" for m in messages):
            response = sglang(lambda s: s.tool_call("read_file", {"path": path}))
            if wait_for_both is not None:
                server = wait_for_both
                assert response.steps is not None
                response.steps.insert(0, Until(lambda: server.in_flight >= 2, seconds=20))
            return response
        return sglang(lambda s: s.content(answer))

    return script


async def run_task(
    server: ScriptedServer, repo: Path, home: Path, *extra: str
) -> tuple[int, list[p.Event], TaskResult, str]:
    code, out, err = await run_clover(
        repo,
        "--task",
        TASK,
        "--base-url",
        server.base_url,
        "--sandbox",
        "none",
        "--output-format",
        "stream-json",
        *extra,
        home=home,
    )
    *events, result = [parse_stream_line(line) for line in out.splitlines()]
    assert isinstance(result, TaskResult)
    return code, [e for e in events if not isinstance(e, TaskResult)], result, err


def tool_messages(server: ScriptedServer) -> list[dict[str, Any]]:
    """The tool results of the parent's last request."""
    messages = server.chat_requests[-1].json()["messages"]
    return [m for m in messages if m["role"] == "tool"]


async def test_two_tasks_run_concurrently_and_answer_the_parent(
    scripted_server: ScriptedServer, repo: Path, tmp_path: Path
) -> None:
    route(
        scripted_server,
        parent_two_tasks(),
        {
            "CHILD-A": child_reads("a.py", "a.py defines ALPHA.", wait_for_both=scripted_server),
            "CHILD-B": child_reads("b.py", "b.py defines BETA.", wait_for_both=scripted_server),
        },
    )
    code, events, result, err = await run_task(scripted_server, repo, tmp_path)
    assert code == 0, err
    assert scripted_server.max_in_flight >= 2
    results = [m["content"] for m in tool_messages(scripted_server)]
    assert results == ["a.py defines ALPHA.", "b.py defines BETA."]
    task_ids = {e.call_id for e in events if isinstance(e, p.ToolCallStarted)}
    assert len(task_ids) == 2
    wrapped = [e for e in events if isinstance(e, p.SubagentEvent)]
    assert wrapped and {e.parent_call_id for e in wrapped} == task_ids
    reads = [e.event for e in wrapped if isinstance(e.event, p.ToolCallFinished)]
    assert sorted(r.result.strip() for r in reads)[0].endswith("ALPHA = 1")
    assert result.status == "success" and result.result == "Both looked at."
    assert {(s.call_id, s.agent, s.status) for s in result.subagents} == {
        (i, "explore", "completed") for i in task_ids
    }
    assert all(s.tokens > 0 for s in result.subagents)


async def test_failing_child_is_a_failed_tool_result_and_the_parent_goes_on(
    scripted_server: ScriptedServer, repo: Path, tmp_path: Path
) -> None:
    def broken(request: RecordedRequest, messages: list[dict[str, Any]]) -> ScriptedResponse:
        return error_response(400, "the model refused this request")

    route(
        scripted_server,
        parent_two_tasks("One answer came back."),
        {"CHILD-A": child_reads("a.py", "a.py defines ALPHA."), "CHILD-B": broken},
    )
    code, events, result, err = await run_task(scripted_server, repo, tmp_path)
    assert code == 0, err
    first, second = (m["content"] for m in tool_messages(scripted_server))
    assert first == "a.py defines ALPHA."
    assert second.startswith("error: the explore agent failed") and "refused" in second
    finished = [e for e in events if isinstance(e, p.ToolCallFinished)]
    assert sorted(f.status for f in finished) == ["error", "ok"]
    assert result.status == "success" and result.result == "One answer came back."
    assert sorted(s.status for s in result.subagents) == ["completed", "failed"]


async def test_explore_child_cannot_write(
    scripted_server: ScriptedServer, repo: Path, tmp_path: Path
) -> None:
    def parent(request: RecordedRequest, messages: list[dict[str, Any]]) -> ScriptedResponse:
        if not any(m["role"] == "tool" for m in messages):
            return sglang(lambda s: s.tool_call(*task_call("a.py", "CHILD-W: write c.py")))
        return sglang(lambda s: s.content("done"))

    def child(request: RecordedRequest, messages: list[dict[str, Any]]) -> ScriptedResponse:
        tools = {t["function"]["name"] for t in request.json()["tools"]}
        assert "write_file" not in tools and "task" not in tools and "read_file" in tools
        if not any(m["role"] == "tool" for m in messages):
            return sglang(lambda s: s.tool_call("write_file", {"path": "c.py", "content": "X"}))
        return sglang(lambda s: s.content("I could not write."))

    route(scripted_server, parent, {"CHILD-W": child})
    code, events, _result, err = await run_task(
        scripted_server, repo, tmp_path, "--approval", "full-auto"
    )
    assert code == 0, err
    assert not (repo / "c.py").exists()
    child_results = [
        e.event
        for e in events
        if isinstance(e, p.SubagentEvent) and isinstance(e.event, p.ToolCallFinished)
    ]
    assert child_results[0].status == "error" and "unknown tool" in child_results[0].result


async def test_interrupt_stops_the_children(
    scripted_server: ScriptedServer, repo: Path, tmp_path: Path
) -> None:
    def hold(request: RecordedRequest, messages: list[dict[str, Any]]) -> ScriptedResponse:
        return sse_response(SGLangStream().content("Looking").chunks()[:2], hold=True)

    route(scripted_server, parent_two_tasks(), {"CHILD-A": hold, "CHILD-B": hold})
    proc = await clover(
        repo,
        "--task",
        TASK,
        "--base-url",
        scripted_server.base_url,
        "--sandbox",
        "none",
        "--output-format",
        "json",
        home=tmp_path,
    )
    await async_wait_until(
        lambda: scripted_server.in_flight >= 2, message="both children to ask the server"
    )
    proc.send_signal(signal.SIGINT)
    out, err = await within(proc.communicate(), message="clover-code to stop")
    assert proc.returncode == 130, err.decode()
    result = TaskResult.model_validate_json(out.decode().strip().splitlines()[-1])
    assert result.status == "interrupted"
    await async_wait_until(
        lambda: scripted_server.disconnects >= 2 and scripted_server.in_flight == 0,
        message="the children's requests to be abandoned",
    )
    parent_requests = [
        r
        for r in scripted_server.chat_requests
        if json.loads(r.body)["messages"][1]["content"] == TASK
    ]
    assert len(parent_requests) == 1


async def test_child_events_survive_in_the_transcript_without_their_text(
    scripted_server: ScriptedServer, repo: Path, tmp_path: Path
) -> None:
    route(
        scripted_server,
        parent_two_tasks(),
        {"CHILD-A": child_reads("a.py", "A."), "CHILD-B": child_reads("b.py", "B.")},
    )
    code, _events, result, err = await run_task(scripted_server, repo, tmp_path)
    assert code == 0, err
    assert result.transcript is not None
    lines = [json.loads(line) for line in Path(result.transcript).read_text().splitlines()]
    wrapped = [
        line["event"] for line in lines if line.get("event", {}).get("type") == "subagent_event"
    ]
    kinds = {line["event"]["type"] for line in wrapped}
    assert "tool_call_finished" in kinds and "content_delta" not in kinds


async def test_an_agent_file_naming_a_model_asks_the_server_for_it(
    scripted_server: ScriptedServer, repo: Path, tmp_path: Path
) -> None:
    agents = repo / ".clover" / "agents"
    agents.mkdir(parents=True)
    (agents / "quick.md").write_text(
        "---\nname: quick\ndescription: quick looks\ntools: read_file\nmodel: small-model\n---\n"
        "Answer in one line.\n"
    )

    def parent(request: RecordedRequest, messages: list[dict[str, Any]]) -> ScriptedResponse:
        if not any(m["role"] == "tool" for m in messages):
            return sglang(lambda s: s.tool_call(*task_call("a.py", "CHILD-Q: a.py?", "quick")))
        return sglang(lambda s: s.content("done"))

    def child(request: RecordedRequest, messages: list[dict[str, Any]]) -> ScriptedResponse:
        return sglang(lambda s: s.content("ALPHA."))

    route(scripted_server, parent, {"CHILD-Q": child})
    code, _events, result, err = await run_task(scripted_server, repo, tmp_path)
    assert code == 0, err
    models = {
        r.json()["messages"][1]["content"].startswith("CHILD-Q"): r.json()["model"]
        for r in scripted_server.chat_requests
    }
    assert models == {True: "small-model", False: "test-model"}
    assert [s.agent for s in result.subagents] == ["quick"]
