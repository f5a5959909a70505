"""The hook events of approvals and child agents: what each sends, what its outcome means.

- ``PermissionRequest`` runs where an approval would be asked (the app's dialog, the
  editor's, an SDK program's callback, headless's refusal), with ``tool_name`` and
  ``tool_input``. A deny refuses the call with its message; an allow spares asking,
  within the limits the dispatcher keeps (``agent.turn.call_checks``), and may change
  the arguments (``updatedInput``: the changed call is judged again); no decision asks
  as usual.
- ``SubagentStart`` runs before a child agent's first request, with ``agent_id`` (the
  task call that started it), ``agent_type`` (its definition) and ``prompt``; the
  ``additionalContext`` it answers joins the child's task. It cannot stop the child.
- ``SubagentStop`` runs when the child's run ends (not when it was interrupted), with
  ``stop_hook_active``, ``agent_id``, ``agent_type``, ``agent_transcript_path`` (the
  session's transcript, where the child's events are the ``subagent_event`` records
  whose ``parent_call_id`` is ``agent_id``) and ``last_assistant_message``. A block
  sends a child that completed back to work with the reason, within its request limit.

The matcher of the child events is over agent names (``agent_type``).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from clover_code import protocol as p
from clover_code.agent.extensions.hooks import HookRunner

__all__ = ["PermissionAnswer", "child_run", "permission_request"]


@dataclass(frozen=True, slots=True)
class PermissionAnswer:
    """What the PermissionRequest hooks decided: allow, deny, or nothing (None)."""

    behavior: Literal["allow", "deny"] | None = None
    message: str = ""
    """Why it denied (the model is told)."""
    tool_input: dict[str, Any] | None = None
    """With an allow: the arguments the call is to run with instead (``updatedInput``),
    judged again before it runs."""


async def permission_request(
    hooks: HookRunner | None, tool: str, tool_input: Mapping[str, Any]
) -> PermissionAnswer:
    """Run the PermissionRequest hooks for a call about to be asked about."""
    if hooks is None or not hooks.has("PermissionRequest"):
        return PermissionAnswer()
    data = {"tool_name": tool, "tool_input": dict(tool_input)}
    outcome = await hooks.run("PermissionRequest", data, tool=tool)
    if outcome.blocked:
        return PermissionAnswer("deny", outcome.reason)
    if not outcome.approved:
        return PermissionAnswer()
    return PermissionAnswer("allow", tool_input=outcome.tool_input)


async def child_run(
    run_turn: Callable[[str], Awaitable[p.TurnFinished]],
    prompt: str,
    hooks: HookRunner | None,
    *,
    agent_id: str,
    agent_type: str,
    max_requests: int,
) -> p.TurnFinished:
    """A child agent's whole run: the SubagentStart hooks, its turn, and again while a
    SubagentStop hook sends it back to work (``max_requests`` in all)."""
    who = {"agent_id": agent_id, "agent_type": agent_type}
    if hooks is not None and hooks.has("SubagentStart"):
        started = await hooks.run("SubagentStart", {**who, "prompt": prompt})
        if started.context:
            prompt = "\n\n".join([prompt, "Context from a SubagentStart hook:", *started.context])
    finished = await run_turn(prompt)
    requests, active = finished.model_requests, False
    while hooks is not None and hooks.has("SubagentStop") and finished.status != "interrupted":
        data = {
            **who,
            "stop_hook_active": active,
            "agent_transcript_path": str(hooks.transcript_path),
            "last_assistant_message": finished.final_text,
        }
        outcome = await hooks.run("SubagentStop", data)
        if not outcome.blocked or finished.status != "completed" or requests >= max_requests:
            break
        finished = await run_turn(f"[A SubagentStop hook asks you to go on] {outcome.reason}")
        requests, active = requests + finished.model_requests, True
    return finished
