"""The task tools: hand one investigation or sub-task to a child agent (``task``), and
follow children started in the background (``task_result``, ``task_stop``).

The child (``clover_code.agent.extensions.subagents``) works in its own context with a
narrower tool set and only its final answer, plus the files it changed, comes
back as the result. Several task calls in one response run at the same time;
one with ``background`` returns at once and the child's report comes later.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field

from clover_code.agent.extensions.agent_defs import DEFAULT_AGENT, Isolation
from clover_code.tools.base import Tool, ToolContext, ToolKind, ToolResult

if TYPE_CHECKING:
    from clover_code.agent.extensions.subagents import SubagentRunner

__all__ = [
    "TaskArgs",
    "TaskResultArgs",
    "TaskResultTool",
    "TaskStopArgs",
    "TaskStopTool",
    "TaskTool",
    "task_tools",
]

PROMPT_LIMIT = 64 * 1024
MAX_WAIT = 600.0
"""Longest ``task_result`` wait, in seconds."""


class TaskArgs(BaseModel):
    """Arguments of task."""

    model_config = ConfigDict(defer_build=True)
    """Built when a call is first validated (the schema is kept: ``schema_cache``)."""

    description: str = Field(description="A short (3-8 word) label for the task.")
    prompt: str = Field(
        description="Everything the agent needs to know to do the task on its own: it does "
        "not see this conversation. Say what to find or do and what to answer with."
    )
    agent: str = Field(
        DEFAULT_AGENT, description="Which agent to start (the system prompt lists them)."
    )
    background: bool = Field(
        False,
        description="Start the agent and return at once with its task id, instead of "
        "waiting for its answer: you go on working, and its answer and changed files "
        "come to you by themselves with your next request after it ends.",
    )
    isolation: Isolation | None = Field(
        None,
        description="worktree: an agent that may change files works in a git worktree of "
        "its own, and its changes are merged into the workspace when it ends (a conflict "
        "with other changes is reported to you, never applied half). Use it for agents "
        "that edit in parallel. shared: the workspace itself. Default: the agent's own.",
    )


class TaskTool(Tool[TaskArgs]):
    """Starts a child agent and returns its final answer (or, in the background, its id)."""

    name: ClassVar[str] = "task"
    description: ClassVar[str] = (
        "Start a helper agent with its own context to do one self-contained task (an "
        "investigation of some files, a search for how something works, a separate change) "
        "and get back only its final answer. Use it to keep your own context small and to "
        "work in parallel: several task calls in one response run at the same time, and "
        "with background=true you go on working while it runs. The agent does not see this "
        "conversation, so the prompt must say everything it needs."
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
        """Run the child to its end, or start it in the background."""
        return await self.runner.run(
            ctx.call_id or "",
            args.agent,
            args.description,
            args.prompt,
            ctx.allowed_tools,
            background=args.background,
            isolation=args.isolation,
        )


class TaskResultArgs(BaseModel):
    """Arguments of task_result."""

    model_config = ConfigDict(defer_build=True)
    """Built when a call is first validated (the schema is kept: ``schema_cache``)."""

    task_id: str = Field(description="The id task gave when it started the agent (task-1).")
    wait_seconds: float = Field(
        0.0,
        ge=0.0,
        le=MAX_WAIT,
        description="How long to wait for it to end, in seconds (0: answer at once).",
    )


class TaskResultTool(Tool[TaskResultArgs]):
    """A background child's report, waiting for it if asked."""

    name: ClassVar[str] = "task_result"
    description: ClassVar[str] = (
        "Get the answer of an agent started with task(background=true), waiting up to "
        "wait_seconds for it to end; says so when it still runs. Its answer also comes to "
        "you by itself after it ends, so call this only when you cannot go on without it."
    )
    kind: ClassVar[ToolKind] = "other"
    Args = TaskResultArgs
    concurrent: ClassVar[bool] = True

    def __init__(self, runner: SubagentRunner) -> None:
        self.runner = runner

    def summary(self, args: TaskResultArgs) -> str:
        """The task id (and the wait)."""
        wait = f" (wait {args.wait_seconds:g} s)" if args.wait_seconds else ""
        return f"{args.task_id}{wait}"

    async def run(self, args: TaskResultArgs, ctx: ToolContext) -> ToolResult:
        """The child's report, or that it still runs."""
        return await self.runner.background.result(args.task_id, args.wait_seconds)


class TaskStopArgs(BaseModel):
    """Arguments of task_stop."""

    model_config = ConfigDict(defer_build=True)
    """Built when a call is first validated (the schema is kept: ``schema_cache``)."""

    task_id: str = Field(description="The id of the background agent to stop (task-1).")


class TaskStopTool(Tool[TaskStopArgs]):
    """Stops a background child."""

    name: ClassVar[str] = "task_stop"
    description: ClassVar[str] = (
        "Stop an agent started with task(background=true) that is no longer needed; "
        "answers with what it had done so far."
    )
    kind: ClassVar[ToolKind] = "other"
    Args = TaskStopArgs

    def __init__(self, runner: SubagentRunner) -> None:
        self.runner = runner

    def summary(self, args: TaskStopArgs) -> str:
        """The task id."""
        return args.task_id

    async def run(self, args: TaskStopArgs, ctx: ToolContext) -> ToolResult:
        """Stop the child; its report so far."""
        return await self.runner.background.stop(args.task_id)


def task_tools(runner: SubagentRunner) -> list[Tool[Any]]:
    """The three task tools, on one runner."""
    return [TaskTool(runner), TaskResultTool(runner), TaskStopTool(runner)]
