"""Child agents of the task tool, in process against scripted backends."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

from clover_code import protocol as p
from clover_code.agent.extensions.agent_defs import BUILTIN_AGENTS, agents_prompt, load_agents
from clover_code.config.settings import Settings
from clover_code.engine import events as ev
from clover_code.engine.base import ChatRequest
from tests.fakes import ScriptedBackend, text_response, tool_response
from tests.sessions import open_session


class CountingBackend(ScriptedBackend):
    """A scripted backend that records how many streams were open at once.

    ``local`` names it like an in-process engine."""

    def __init__(self, responses: Sequence[list[Any]], *, local: bool) -> None:
        super().__init__(responses)
        self.name = "hf" if local else "remote"
        self.open = 0
        self.most_open = 0

    async def stream(self, request: ChatRequest) -> AsyncGenerator[ev.EngineEvent, None]:
        self.open += 1
        self.most_open = max(self.most_open, self.open)
        try:
            async for event in super().stream(request):
                yield event
        finally:
            self.open -= 1


def _task(prompt: str, agent: str = "explore") -> tuple[str, dict[str, Any]]:
    return "task", {"description": "look", "prompt": prompt, "agent": agent}


def _slow_answer(text: str) -> list[Any]:
    # Pauses inside the stream give a concurrent one the chance to start.
    return [0.05, *text_response(text)[:2], 0.05, *text_response(text)[2:]]


@pytest.mark.parametrize("local", [True, False])
async def test_children_requests_reach_every_engine_at_once(
    make_settings: Callable[..., Settings], repo: Path, local: bool
) -> None:
    backend = CountingBackend(
        [
            tool_response(_task("first"), _task("second")),
            _slow_answer("one"),
            _slow_answer("two"),
            text_response("done"),
        ],
        local=local,
    )
    events: list[p.Event] = []
    session = await open_session(make_settings(), backend, repo, events)
    finished = await session.run_turn("go")
    await session.close()
    assert finished.status == "completed"
    # Both children's requests reach the engine together, a local one too: the engine
    # itself batches them (or takes turns), never the agent.
    assert backend.most_open == 2
    results = sorted(e.result for e in events if isinstance(e, p.ToolCallFinished))
    assert results == ["one", "two"]


async def test_a_child_has_no_task_tool(make_settings: Callable[..., Settings], repo: Path) -> None:
    backend = ScriptedBackend(
        [tool_response(_task("look", agent="general")), text_response("seen"), text_response("ok")]
    )
    events: list[p.Event] = []
    session = await open_session(make_settings(), backend, repo, events)
    await session.run_turn("go")
    runner = session.subagents
    await session.close()
    assert runner is not None
    parent_tools = {t.name for t in backend.requests[0].tools}
    child_tools = {t.name for t in backend.requests[1].tools}
    task_tools = {"task", "task_result", "task_stop"}
    assert task_tools <= parent_tools and not task_tools & child_tools
    assert child_tools == parent_tools - task_tools
    for definition in BUILTIN_AGENTS.values():
        assert "task" not in {t.name for t in runner.tools_for(definition)}
    explore = {t.kind for t in runner.tools_for(BUILTIN_AGENTS["explore"])}
    assert explore <= {"read", "search"}
    assert runner.approval_mode_for(BUILTIN_AGENTS["explore"]) == "read-only"
    assert runner.approval_mode_for(BUILTIN_AGENTS["general"]) == "auto-edit"


async def test_project_agent_cannot_widen_tools(
    make_settings: Callable[..., Settings], repo: Path
) -> None:
    agents_dir = repo / ".clover" / "agents"
    agents_dir.mkdir(parents=True)
    (agents_dir / "wide.md").write_text(
        "---\nname: wide\ndescription: Wants everything.\n"
        "tools: [read_file, shell, task, web_fetch]\nmodel: big\n---\nDo it all.\n"
    )
    backend = ScriptedBackend(
        [tool_response(_task("x", agent="wide")), text_response("fine"), text_response("ok")]
    )
    events: list[p.Event] = []
    session = await open_session(make_settings(sandbox="none"), backend, repo, events)
    await session.run_turn("go")
    await session.close()
    parent_tools = {t.name for t in backend.requests[0].tools}
    child_tools = {t.name for t in backend.requests[1].tools}
    assert child_tools == {"read_file", "shell", "task", "web_fetch"} & parent_tools - {"task"}
    assert "task_result" in parent_tools
    system = str(backend.requests[0].messages[0]["content"])
    assert "- wide: Wants everything." in system and "- explore:" in system
    assert str(backend.requests[1].messages[0]["content"]).startswith("Do it all.")


def test_agent_files_are_read_and_bad_ones_skipped(tmp_path: Path) -> None:
    project = tmp_path / "repo" / ".clover" / "agents"
    user = tmp_path / "config" / "agents"
    project.mkdir(parents=True)
    user.mkdir(parents=True)
    (project / "reviewer.md").write_text(
        "---\ndescription: Reviews a diff.\ntools: read_file, grep\n---\nReview.\n"
    )
    (project / "broken.md").write_text("---\nname: broken\n---\nno description\n")
    (project / "explore.md").write_text("---\ndescription: Mine.\n---\nMine.\n")
    (user / "reviewer.md").write_text("---\ndescription: The user's.\n---\nUser.\n")
    (user / "helper.md").write_text("---\ndescription: Helps.\n---\nHelp.\n")
    agents, notes = load_agents(tmp_path / "repo", tmp_path / "config")
    assert set(agents) == {"explore", "general", "reviewer", "helper"}
    assert agents["reviewer"].tools == frozenset({"read_file", "grep"})
    assert agents["reviewer"].description == "Reviews a diff."
    assert agents["helper"].read_only and agents["helper"].tools is None
    assert len(notes) == 3
    assert any("broken.md" in n and "no description" in n for n in notes)
    assert "- reviewer: Reviews a diff." in agents_prompt(agents)


async def test_unknown_agent_and_token_limit_are_failed_results(
    make_settings: Callable[..., Settings], repo: Path
) -> None:
    long_answer = text_response("x" * 400)
    backend = ScriptedBackend(
        [
            tool_response(_task("a", agent="nobody")),
            tool_response(_task("b")),
            long_answer,
            text_response("ok"),
        ]
    )
    events: list[p.Event] = []
    session = await open_session(make_settings(subagent_max_tokens=50), backend, repo, events)
    finished = await session.run_turn("go")
    await session.close()
    assert finished.status == "completed"
    done = [e for e in events if isinstance(e, p.ToolCallFinished)]
    assert done[0].status == "error" and "no agent 'nobody'" in done[0].result
    assert done[1].status == "error" and "subagent_max_tokens" in done[1].result
    assert isinstance(done[1].display, p.SubagentRun) and done[1].display.status == "failed"
