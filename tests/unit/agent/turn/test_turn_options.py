"""A turn's options are the turn's: passed to ``run_turn``, held by nothing after it.

A custom command's allowed-tools narrow what the model is offered and may call
in that turn, and what a child agent started in it gets; the next turn offers
every tool again. The session's limits (``max_turns`` counts model requests)
are given to the agent when it is built.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from clover_code import protocol as p
from clover_code.agent.open import SessionOptions, open_session
from clover_code.agent.permissions.approval import RefuseApprover
from clover_code.agent.turn.options import TurnLimits, TurnOptions
from clover_code.config.settings import Settings
from tests.fakes import ScriptedBackend, text_response, tool_response

TASK = ("task", {"description": "look", "prompt": "write a file", "agent": "general"})
WRITE = ("write_file", {"path": "new.txt", "content": "x"})


def _offered(backend: ScriptedBackend, request: int) -> set[str]:
    return {tool.name for tool in backend.requests[request].tools}


async def test_allowed_tools_hold_for_their_turn_and_its_children_only(
    make_settings: Callable[..., Settings], repo: Path
) -> None:
    backend = ScriptedBackend(
        [
            tool_response(TASK),  # the narrowed turn starts a child,
            tool_response(WRITE),  # which calls a tool the turn does not allow,
            text_response("could not"),
            text_response("the child could not write"),
            tool_response(WRITE),  # the next turn may write again
            text_response("written"),
        ]
    )
    events: list[p.Event] = []
    options = SessionOptions(
        emit=events.append, approver=RefuseApprover(), approval_mode="full-auto", backend=backend
    )
    session = await open_session(make_settings(), repo, options)
    narrowed = TurnOptions(allowed_tools=frozenset({"read_file", "grep", "task"}))
    first = await session.agent.run_turn("look around", narrowed)
    second = await session.agent.run_turn("now write it")
    await session.close()
    assert first.status == second.status == "completed"
    assert _offered(backend, 0) == {"read_file", "grep", "task"}
    assert _offered(backend, 1) == {"read_file", "grep"}  # the child's: no task tool
    child = [e.event for e in events if isinstance(e, p.SubagentEvent)]
    child_write = next(e for e in child if isinstance(e, p.ToolCallFinished))
    assert child_write.status == "error" and "unknown tool 'write_file'" in child_write.result
    assert {"write_file", "shell", "task"} <= _offered(backend, 4)
    assert (repo / "new.txt").read_text() == "x"


async def test_the_request_limit_is_the_agents_own(
    make_settings: Callable[..., Settings], repo: Path
) -> None:
    backend = ScriptedBackend([tool_response(("read_file", {"path": "app.py"}))] * 3)
    events: list[p.Event] = []
    options = SessionOptions(emit=events.append, approver=RefuseApprover(), backend=backend)
    session = await open_session(make_settings(max_turns=2), repo, options)
    assert session.agent.limits == TurnLimits(max_requests=2, timeout=None, deadline=None)
    finished = await session.run_turn("read forever")
    await session.close()
    assert finished.status == "max_turns" and finished.model_requests == 2
    error = next(e for e in events if isinstance(e, p.ErrorEvent))
    assert error.message.startswith("stopped after 2 model requests (--max-turns 2)")
