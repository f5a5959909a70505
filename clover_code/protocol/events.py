"""The events the core reports to front ends: ``Event`` and its kinds.

Re-exported by ``clover_code.protocol``. This module imports nothing else of
clover-code but the protocol's own modules.
"""

# Annotations are objects here, not text (no ``from __future__ import annotations``):
# pydantic reads every field's, and text would be compiled and evaluated at each start.

from collections.abc import Callable
from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Field, TypeAdapter, field_validator

from clover_code.protocol.base import _Event, _Message
from clover_code.protocol.confidence import EditConfidence
from clover_code.protocol.ops import ApprovalMode, RewindWhat
from clover_code.protocol.tool_display import (
    JobState,
    SubagentRun,
    TodoItem,
    ToolDisplay,
    read_display,
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


class BlockDraft(_Event):
    """One denoising step of the block being generated; ``None`` marks a mask."""

    type: Literal["block_draft"] = "block_draft"
    block: int
    step: int
    tokens: list[str | None]
    confidences: list[float] | None = None


class BlockCommitted(_Event):
    """A finished block of model output; its text never changes afterwards."""

    type: Literal["block_committed"] = "block_committed"
    block: int
    text: str = ""
    """The block's raw text (headless stream-json leaves it out: the deltas carry the text)."""
    token_count: int
    steps: int | None = None
    confidence: str | None = None
    """Each token's fill confidence, step and length in the text, compactly
    (``protocol/confidence.py``); None where the engine does not know them."""


class AnswerConfidence(_Event):
    """After a response: the fill confidence of each token of its answer text (the
    response's ``ContentDelta`` texts joined), compactly (``protocol/confidence.py``)."""

    type: Literal["answer_confidence"] = "answer_confidence"
    confidence: str


class AnswerConfidenceDelta(_Event):
    """While a response streams: the fill confidences of the answer text found in its
    committed blocks since the last one, compactly; each continues where the one before
    ended (``AnswerConfidence`` holds them all once the response is over)."""

    type: Literal["answer_confidence_delta"] = "answer_confidence_delta"
    confidence: str


class ReasoningDelta(_Event):
    """Thinking text."""

    type: Literal["reasoning_delta"] = "reasoning_delta"
    text: str


class ContentDelta(_Event):
    """Answer text."""

    type: Literal["content_delta"] = "content_delta"
    text: str


class ToolCallStarted(_Event):
    """A validated tool call is about to run (or wait for approval)."""

    type: Literal["tool_call_started"] = "tool_call_started"
    call_id: str
    name: str
    kind: str
    arguments: dict[str, Any]
    summary: str


class ToolOutput(_Event):
    """Live output of a running command."""

    type: Literal["tool_output"] = "tool_output"
    call_id: str
    text: str


class ToolCallFinished(_Event):
    """A tool call ended; ``result`` is what the model sees."""

    type: Literal["tool_call_finished"] = "tool_call_finished"
    call_id: str
    name: str
    status: Literal["ok", "error", "denied", "cancelled"]
    result: str
    display: ToolDisplay | None = None
    """What a front end may show besides ``result``, typed by kind; None when nothing."""
    duration: float = 0.0
    low_confidence: EditConfidence | None = None
    """For an edit: its changed tokens the model filled with low confidence (engines that
    report fill confidences)."""

    @field_validator("display", mode="before")
    @classmethod
    def _read_display(cls, value: object) -> object:
        # Transcripts of earlier versions hold untagged dictionaries; shapes
        # this version cannot read are dropped rather than failing the event.
        return read_display(value)


class ApprovalRequested(_Event):
    """The core waits for an ``ApprovalDecision`` on this call."""

    type: Literal["approval_requested"] = "approval_requested"
    request_id: str
    call_id: str
    name: str
    kind: str
    summary: str
    arguments: dict[str, Any]
    prefix: str | None = None
    """The command prefix an ``allow_prefix`` decision would cover."""
    diff: str | None = None
    """For an edit: the unified diff it would make to the file as it is now."""
    low_confidence: EditConfidence | None = None
    """For an edit: its changed tokens filled with low confidence, and their lines."""


class UsageReport(_Event):
    """Token accounting after a model response."""

    type: Literal["usage"] = "usage"
    prompt_tokens: int
    completion_tokens: int
    context_window: int
    tokens_per_second: float | None = None
    blocks_per_second: float | None = None
    tokens_per_forward: float | None = None
    """Tokens per denoising forward pass, for a backend that reports steps per block."""
    experts_per_layer: float | None = None
    """Mean distinct routed experts per MoE layer per block (the local hf engine)."""
    cached_tokens: int = 0
    """Prompt tokens the server read from its prompt cache (0: none reported)."""
    cost: float | None = None
    """What the response cost, from the model's price per million tokens (``pricing``);
    0 on a local engine; null when the model has no price."""


class TodoUpdated(_Event):
    """The model's checklist changed; front ends show it."""

    type: Literal["todo_updated"] = "todo_updated"
    items: list[TodoItem]


class UndoDone(_Event):
    """The workspace was restored to a checkpoint."""

    type: Literal["undo_done"] = "undo_done"
    turns: int
    files: list[str]
    """Paths (relative to the workspace) that were restored or removed."""
    turn: int | None = None
    """The oldest turn undone (its number in the session)."""
    forgotten: bool = False
    """The undone turns were also removed from the conversation the model sees (not
    possible when it was compacted or cleared since)."""
    what: RewindWhat = "both"
    """What was asked for: files restored, conversation cut back, or both."""
    still_held: bool = False
    """Files only: the conversation still holds the undone turns (it was not cut back,
    compacted or cleared since)."""


class DiffReport(_Event):
    """What the agent changed this session, as a unified diff."""

    type: Literal["diff_report"] = "diff_report"
    diff: str
    files: list[str]


class Compacted(_Event):
    """Older turns were summarised to free context."""

    type: Literal["compacted"] = "compacted"
    summary: str
    tokens_before: int
    tokens_after: int
    cost: float | None = 0.0
    """What the summary request cost (see ``UsageReport.cost``); null when unpriced."""


class ApprovalModeChanged(_Event):
    """The approval mode now in force (after a ``SetApprovalMode``)."""

    type: Literal["approval_mode_changed"] = "approval_mode_changed"
    mode: ApprovalMode


class ModelChanged(_Event):
    """The model the session uses from the next request on (after a ``SetModel``, or
    on resuming a session that had switched)."""

    type: Literal["model_changed"] = "model_changed"
    model: str
    """The id the server is asked for."""
    name: str
    """What was asked for: the id, or a name of the ``[models]`` table."""
    context_window: int
    """Its context window, in tokens."""
    vision: bool | None = None
    """Whether images go to it: true, false (text only), or None (sent until its server
    refuses them)."""


class ModelOption(_Message):
    """A model the session could switch to (what ``/model`` and an editor's model
    menu list)."""

    name: str
    """What ``SetModel`` takes for it: a name of the ``[models]`` table, else the id."""
    id: str
    """The id the server lists."""
    current: bool = False
    """The session uses it now."""
    served: bool = True
    """The server lists it now (False: only configured, or the server did not say)."""
    context_window: int | None = None
    """Its context window, when configured or reported by the server."""
    vision: bool | None = None
    """Whether it takes images, when configured."""


class AutoCommitted(_Event):
    """The answer to ``AutoCommit``: the new commit, or None when nothing changed."""

    type: Literal["auto_committed"] = "auto_committed"
    commit: str | None = None


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


class JobInfo(_Message):
    """One background job of the session (``shell`` with ``background: true``)."""

    id: str
    command: str
    state: JobState
    exit_code: int | None = None
    """Its exit code once it exited by itself; None while running or when killed."""
    started: float
    """When it started, in seconds since the epoch."""
    ended: float | None = None
    reason: str = ""
    """Why it stopped or was lost, in a few words (``interrupted``, ``the session ended``)."""


class JobsChanged(_Event):
    """The session's background jobs after one started, ended or was stopped: each job
    it still keeps, oldest first (front ends show the running ones)."""

    type: Literal["jobs_changed"] = "jobs_changed"
    jobs: list[JobInfo]
    """Each with its ``id``, ``command``, ``state``, ``exit_code``, ``started``, ``ended``
    and ``reason``."""


class BackgroundTaskFinished(_Event):
    """A child agent the ``task`` call ``call_id`` started in the background has ended.

    Its task call returned when it started (``BackgroundTask``); this carries
    what the call's result would have: the answer (or why it failed) and what
    it cost. The parent model gets it with its next request."""

    type: Literal["background_task_finished"] = "background_task_finished"
    call_id: str
    task_id: str
    agent: str
    status: Literal["ok", "error", "cancelled"]
    result: str
    display: SubagentRun


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
