"""Run the agent inside another Python program.

    from clover_code import sdk

    result = sdk.run("fix the failing test", cwd="my-project",
                     base_url="http://localhost:30000/v1")
    print(result.status, result.result)

    async with sdk.Session(cwd="my-project", can_use_tool=ask_me) as session:
        async for event in session.send("explain calc.py"):
            ...

``run`` / ``arun`` run one task and return the ``TaskResult`` headless JSON
prints; ``Session`` holds a conversation and yields the protocol's typed
events (``clover_code.protocol``). Options are the settings' fields, checked
as flags are; ``can_use_tool`` answers approvals with ``Allow`` or ``Deny``;
``tool`` makes a custom tool of a function taking a pydantic model; hooks
are functions (or ``Hook``) answering with ``HookReply``. Errors are
``clover_code.errors.CloverError`` subclasses. docs/sdk.md is the guide.
This package never imports Textual.
"""

from __future__ import annotations

from clover_code.agent.open import HookFunction as Hook
from clover_code.agent.open import HookReply
from clover_code.outcome.result import TaskResult
from clover_code.sdk.approval import Allow, Deny, ToolCall
from clover_code.sdk.run import arun, run
from clover_code.sdk.session import Session
from clover_code.sdk.tools import FunctionTool, tool

__all__ = [
    "Allow",
    "Deny",
    "FunctionTool",
    "Hook",
    "HookReply",
    "Session",
    "TaskResult",
    "ToolCall",
    "arun",
    "run",
    "tool",
]
