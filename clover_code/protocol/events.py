"""The events the core reports to front ends: ``Event``, the union of their kinds.

Here are the kinds of a session's life (its start and end, each turn's, notices,
errors, hooks and a child agent's events); the others have modules of their own:
``output_events`` (a model response streaming), ``tool_events`` (tool calls) and
``op_results`` (what an op did to the session). Re-exported by
``clover_code.protocol``. This module imports nothing else of clover-code but the
protocol's own modules.
"""

# Annotations are objects here, not text (no ``from __future__ import annotations``):
# pydantic reads every field's, and text would be compiled and evaluated at each start.

from collections.abc import Callable
from typing import Annotated, Literal

from pydantic import ConfigDict, Field, TypeAdapter

from clover_code.protocol.base import _Event
from clover_code.protocol.op_results import (
    ApprovalModeChanged,
    AutoCommitted,
    Compacted,
    DiffReport,
    ModelChanged,
    UndoDone,
)
from clover_code.protocol.output_events import (
    AnswerConfidence,
    AnswerConfidenceDelta,
    BlockCommitted,
    BlockDraft,
    ContentDelta,
    ReasoningDelta,
    UsageReport,
)
from clover_code.protocol.tool_events import (
    ApprovalRequested,
    BackgroundTaskFinished,
    JobsChanged,
    TodoUpdated,
    ToolCallFinished,
    ToolCallStarted,
    ToolOutput,
)


class SessionStarted(_Event):
    """A session is ready: which engine, model, sandbox and where it is saved."""

    type: Literal["session_started"] = "session_started"
    session_id: str
    cwd: str
    engine: str
    model: str
    sandbox: str
    approval: str
    transcript: str
    resumed: bool = False
    checkpoint_warning: str | None = None
    """Why snapshotting this workspace needs a yes first (home directory, many files
    outside git); turns are not checkpointed until ``AllowCheckpoints`` answers."""


class TurnStarted(_Event):
    """The agent began working on a user input."""

    type: Literal["turn_started"] = "turn_started"
    turn: int
    text: str


class Notice(_Event):
    """Something the user should know that is not an error."""

    type: Literal["notice"] = "notice"
    level: Literal["info", "warning"] = "info"
    text: str


class ErrorEvent(_Event):
    """Something went wrong; ``fatal`` means the session cannot go on."""

    type: Literal["error"] = "error"
    message: str
    fatal: bool = False


class HookRan(_Event):
    """A hook program ran (``clover_code.agent.extensions.hooks``); a blocked or failed one
    is also reported as a warning ``Notice``."""

    type: Literal["hook_ran"] = "hook_ran"
    event: str
    """The lifecycle point: ``SessionStart``, ``UserPromptSubmit``, ``PreToolUse``,
    ``PostToolUse``, ``PreCompact``, ``Stop``, ``SessionEnd`` or ``Notification`` (a
    front end told the user that something waits for them)."""
    command: str
    outcome: Literal["ok", "blocked", "failed", "refused"]
    """ok: it let things go on; blocked: exit 2 or a block decision; failed: it
    could not start, crashed, timed out, printed bad JSON or exited with another
    code (then clover-code went on); refused: it was not run, because a file it
    names in the workspace changed since the user trusted it or is not covered
    by that trust (a refused PreToolUse hook blocks the call)."""
    message: str = ""
    """The reason or problem, in one sentence."""
    tool_name: str | None = None


TurnStatus = Literal["completed", "interrupted", "failed", "max_turns", "timeout", "max_cost"]


class TurnFinished(_Event):
    """The turn ended and the core is ready for the next input."""

    type: Literal["turn_finished"] = "turn_finished"
    turn: int
    status: TurnStatus
    final_text: str = ""
    model_requests: int = 0
    token_limit: bool = False
    """A completed turn's final answer stopped at the token limit (``max_tokens``): cut."""
    blocked: bool = False
    """A UserPromptSubmit hook refused the prompt: the model never saw it (status failed)."""


class SubagentEvent(_Event):
    """An event of a child agent started by the ``task`` tool call ``parent_call_id``.

    Every event a child emits reaches front ends wrapped like this, so they can
    show it under the parent's call (or leave it out) and never mix it up with
    the parent's own stream."""

    type: Literal["subagent_event"] = "subagent_event"
    parent_call_id: str
    agent: str
    """The child's agent definition, e.g. ``explore``."""
    event: "Event"


class SessionEnded(_Event):
    """The session closed; the transcript is complete."""

    type: Literal["session_ended"] = "session_ended"
    session_id: str


Event = Annotated[
    SessionStarted
    | TurnStarted
    | BlockDraft
    | BlockCommitted
    | AnswerConfidence
    | AnswerConfidenceDelta
    | ReasoningDelta
    | ContentDelta
    | ToolCallStarted
    | ToolOutput
    | ToolCallFinished
    | ApprovalRequested
    | UsageReport
    | TodoUpdated
    | UndoDone
    | DiffReport
    | Compacted
    | ApprovalModeChanged
    | ModelChanged
    | AutoCommitted
    | Notice
    | ErrorEvent
    | HookRan
    | TurnFinished
    | SubagentEvent
    | JobsChanged
    | BackgroundTaskFinished
    | SessionEnded,
    Field(discriminator="type"),
]
EVENT_ADAPTER: TypeAdapter[Event] = TypeAdapter(Event, config=ConfigDict(defer_build=True))

Emit = Callable[[Event], None]
"""Where the core reports its events: the callback a front end hands the session."""
