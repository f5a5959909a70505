"""The events of tool calls: a call starting, its live output, its approval and its end.

Also what outlives a call: the todo list it wrote, the background jobs it left
running and a background child agent's end. Members of ``Event``
(``events.py``), re-exported by ``clover_code.protocol``.
"""

# Annotations are objects here, not text (no ``from __future__ import annotations``):
# pydantic reads every field's, and text would be compiled and evaluated at each start.

from typing import Any, Literal

from pydantic import field_validator

from clover_code.protocol.base import _Event, _Message
from clover_code.protocol.confidence import EditConfidence
from clover_code.protocol.tool_display import (
    JobState,
    SubagentRun,
    TodoItem,
    ToolDisplay,
    read_display,
)


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


class TodoUpdated(_Event):
    """The model's checklist changed; front ends show it."""

    type: Literal["todo_updated"] = "todo_updated"
    items: list[TodoItem]


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
