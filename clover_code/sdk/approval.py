"""The approval callback: the embedding program answers what the approval mode asks.

``can_use_tool(call)`` gets a ``ToolCall`` each time the approval mode (and
the permission rules) would ask the user, and answers ``Allow()`` or
``Deny(reason)``; the reason goes to the model. It may be a plain function
or a coroutine function. What the mode or a deny rule refuses never reaches
it, and what they allow runs without it. An exception it raises, or an
answer that is neither, refuses the call with a sentence saying so.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from clover_code.agent.open import ApprovalRequest, Decision

__all__ = ["Allow", "ApprovalCallback", "CallbackApprover", "Deny", "ToolCall"]


@dataclass(frozen=True, slots=True)
class ToolCall:
    """A tool call waiting for the approval callback's answer."""

    id: str
    name: str
    """The tool, e.g. ``shell``, ``edit_file``, ``mcp__docs__search`` or a custom one."""
    kind: str
    """read, search, edit, execute or fetch."""
    summary: str
    """One line naming the key arguments (a command, a path)."""
    arguments: Mapping[str, Any] = field(default_factory=dict)
    diff: str | None = None
    """For an edit: the unified diff it would make to the file as it is now."""
    protected: bool = False
    """It writes one of the project's own clover-code config files."""


@dataclass(frozen=True, slots=True)
class Allow:
    """Let the call run."""


@dataclass(frozen=True, slots=True)
class Deny:
    """Refuse the call; ``reason`` tells the model why (and what to do instead)."""

    reason: str = "the program embedding the agent did not allow this call."


ApprovalCallback = Callable[[ToolCall], Allow | Deny | Awaitable[Allow | Deny]]


class CallbackApprover:
    """An ``Approver`` (``clover_code.agent.open``) that asks the callback."""

    shows_diff = True
    """Edit requests carry the diff they would make (``ToolCall.diff``)."""

    def __init__(self, callback: ApprovalCallback) -> None:
        self._callback = callback

    async def request(self, request: ApprovalRequest) -> Decision:
        """The callback's answer as a decision."""
        call = ToolCall(
            id=request.call_id,
            name=request.name,
            kind=request.kind,
            summary=request.summary,
            arguments=dict(request.arguments),
            diff=request.diff,
            protected=request.protected,
        )
        try:
            answer = self._callback(call)
            if inspect.isawaitable(answer):
                answer = await answer
        except Exception as exc:  # the embedding program's bug: the call is refused
            return Decision(
                allowed=False,
                feedback=f"the approval callback raised {type(exc).__name__}: {exc}"[:300],
            )
        if isinstance(answer, Allow):
            return Decision(allowed=True)
        if isinstance(answer, Deny):
            return Decision(allowed=False, feedback=answer.reason)
        return Decision(
            allowed=False,
            feedback=f"the approval callback answered {type(answer).__name__}, not Allow or Deny.",
        )
