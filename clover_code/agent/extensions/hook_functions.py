"""Hooks as functions: the embedding program's own code, run at lifecycle points.

A ``HookFunction`` stands where a configured hook program would
(``hooks.HookRunner`` runs both, in order): it is called with the same JSON
object a program gets on stdin and answers with a ``HookReply`` (or None: go
on), which is judged exactly like a program's JSON output: ``block`` refuses
the call or prompt with ``reason`` (PermissionRequest: denies; Stop, SubagentStop:
sends the model back to work with it), ``approve`` spares asking the user
(PreToolUse, PermissionRequest; deny rules, the mode's refusals and protected
paths still apply), ``tool_input`` replaces a PreToolUse call's arguments
(validated like the model's own) and ``context`` is added to the model's context
(UserPromptSubmit, SessionStart; SubagentStart: the child's).

A coroutine function is awaited (its ``timeout`` applies); a plain function
runs on the event loop, so one that waits should be a coroutine. An exception
it raises, a reply of another type or one that is not JSON is reported in one
sentence, like a hook program that crashed, and the session goes on.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import re
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from clover_code.errors import ConfigError

__all__ = ["FunctionCall", "HookFunction", "HookReply", "call_hook_function"]


@dataclass(frozen=True, slots=True)
class HookReply:
    """What a hook function decides; every field is optional."""

    decision: Literal["block", "approve"] | None = None
    reason: str = ""
    """Why it blocks (the model or the user is told), or a note on an approval."""
    tool_input: Mapping[str, Any] | None = None
    """PreToolUse: the arguments to use instead of the model's."""
    context: str = ""
    """UserPromptSubmit, SessionStart, SubagentStart: text added to the model's context."""

    def as_json(self) -> str:
        """The reply as a hook program's JSON output."""
        data: dict[str, Any] = {"reason": self.reason}
        if self.decision is not None:
            data["decision"] = self.decision
        if self.tool_input is not None:
            data["tool_input"] = dict(self.tool_input)
        if self.context:
            data["additionalContext"] = self.context
        return json.dumps(data)


HookCallable = Callable[[dict[str, Any]], HookReply | Awaitable[HookReply | None] | None]
"""A hook function: the event's JSON object in, a reply (or None) out."""


@dataclass(frozen=True, slots=True)
class HookFunction:
    """A function run as a hook; ``matcher`` and ``timeout`` as a hook program's."""

    function: HookCallable
    matcher: str = ""
    """Regular expression over tool names (PreToolUse, PostToolUse, PermissionRequest)
    or agent names (SubagentStart, SubagentStop); empty: every one."""
    timeout: float = 60.0
    """Seconds a coroutine function may take before it is cancelled."""

    def __post_init__(self) -> None:
        if not callable(self.function):
            kind = type(self.function).__name__
            raise ConfigError(f"a hook needs a function to call, not a {kind}.")
        try:
            re.compile(self.matcher)
        except re.error as exc:
            raise ConfigError(
                f"the hook matcher {self.matcher!r} is not a regular expression ({exc})."
            ) from None

    @property
    def command(self) -> str:
        """How events and notices name it: ``python:module.function``."""
        module = getattr(self.function, "__module__", None) or "?"
        name = getattr(self.function, "__qualname__", None) or type(self.function).__name__
        return f"python:{module}.{name}"


@dataclass(frozen=True, slots=True)
class FunctionCall:
    """How one call of a hook function went: its reply as JSON text ("" for none),
    or the problem that stopped it (as the end of a sentence)."""

    output: str = ""
    problem: str | None = None


async def call_hook_function(hook: HookFunction, payload: Mapping[str, Any]) -> FunctionCall:
    """Call ``hook`` with a copy of ``payload`` and return its reply as JSON text."""
    data = json.loads(json.dumps(payload))  # its own copy: it cannot change ours
    try:
        reply = hook.function(data)
        if inspect.isawaitable(reply):
            reply = await asyncio.wait_for(reply, hook.timeout)
    except TimeoutError:
        return FunctionCall(problem=f"it did not finish within {hook.timeout:g} s and was stopped")
    except Exception as exc:  # the embedding program's bug: one sentence, the session goes on
        return FunctionCall(problem=f"it raised {type(exc).__name__}: {exc}"[:300])
    if reply is None:
        return FunctionCall()
    if not isinstance(reply, HookReply):
        return FunctionCall(problem=f"it returned a {type(reply).__name__}, not a HookReply")
    try:
        return FunctionCall(output=reply.as_json())
    except (TypeError, ValueError) as exc:
        return FunctionCall(problem=f"its reply cannot be written as JSON ({exc})")
