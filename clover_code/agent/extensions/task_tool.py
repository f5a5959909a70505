"""The ``task`` tool: hand one investigation or sub-task to a child agent.

The child (``clover_code.agent.extensions.subagents``) works in its own context with a
narrower tool set and only its final answer, plus the files it changed, comes
back as the result. Several task calls in one response run at the same time.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from pydantic import BaseModel, Field

from clover_code.agent.extensions.agent_defs import DEFAULT_AGENT
from clover_code.tools.base import Tool, ToolContext, ToolKind, ToolResult

if TYPE_CHECKING:
    from clover_code.agent.extensions.subagents import SubagentRunner

__all__ = ["TaskArgs", "TaskTool"]

PROMPT_LIMIT = 64 * 1024


class TaskArgs(BaseModel):
    """Arguments of task."""

    description: str = Field(description="A short (3-8 word) label for the task.")
    prompt: str = Field(
        description="Everything the agent needs to know to do the task on its own: it does "
        "not see this conversation. Say what to find or do and what to answer with."
    )
    agent: str = Field(
        DEFAULT_AGENT, description="Which agent to start (the system prompt lists them)."
    )


class TaskTool(Tool[TaskArgs]):
    """Starts a child agent and returns its final answer."""

    name: ClassVar[str] = "task"
    description: ClassVar[str] = (
        "Start a helper agent with its own context to do one self-contained task (an "
        "investigation of some files, a search for how something works, a separate change) "
        "and get back only its final answer. Use it to keep your own context small and to "
        "work in parallel: several task calls in one response run at the same time. The "
        "agent does not see this conversation, so the prompt must say everything it needs."
    )
    kind: ClassVar[ToolKind] = "other"
    Args = TaskArgs
    argument_limits: ClassVar[dict[str, int]] = {"prompt": PROMPT_LIMIT}
    concurrent: ClassVar[bool] = True

    def __init__(self, runner: SubagentRunner) -> None:
        self.runner = runner

    def summary(self, args: TaskArgs) -> str:
        """``agent: description``."""
        return f"{args.agent}: {args.description}"[:120]

    async def run(self, args: TaskArgs, ctx: ToolContext) -> ToolResult:
        """Run the child to its end."""
        return await self.runner.run(
            ctx.call_id or "", args.agent, args.description, args.prompt, ctx.allowed_tools
        )
