"""The one result object of a headless run (``--output-format json`` and the last
line of ``stream-json``).

Success and failure have the same shape: every field is always present, so a
script can read ``status``, ``exit_code``, ``result`` and ``error`` without
checking which keys exist. docs/json-output.md documents each field.

This module imports nothing of clover-code but the protocol, so a consumer can
validate what it reads with ``TaskResult.model_validate_json``.
"""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict

from clover_code import protocol as p
from clover_code.protocol.json_text import printable, printable_value

ResultStatus = Literal["success", "error", "limit", "interrupted"]

ExitReason = Literal[
    "completed",
    "agent_error",
    "output_schema",
    "usage_error",
    "blocked",
    "no_engine",
    "no_sandbox",
    "max_turns",
    "max_tokens",
    "max_cost",
    "output_limit",
    "timeout",
    "interrupted",
]
"""Why the run ended, one word a pipeline can branch on (``exit_reason``)."""

REASON_FOR_EXIT: dict[int, ExitReason] = {
    0: "completed",
    1: "agent_error",
    2: "usage_error",
    3: "no_engine",
    4: "timeout",
    130: "interrupted",
    143: "interrupted",
}
"""The reason an exit code stands for when nothing more precise is known."""

STATUS_FOR_TURN: dict[p.TurnStatus, ResultStatus] = {
    "completed": "success",
    "failed": "error",
    "max_turns": "limit",
    "timeout": "limit",
    "max_cost": "limit",
    "interrupted": "interrupted",
}
"""How a turn's status maps onto the result's status."""


def _printable_value(value: object) -> object:
    return printable(value) if isinstance(value, str) else value


Text = Annotated[str, BeforeValidator(_printable_value)]
"""A string field of the result: undecodable bytes escaped (see ``printable``)."""


class _Frozen(BaseModel):
    # The field docstrings document the published schema (``result_models`` and
    # clover_code.config.field_docs put them there when it is generated). Built when
    # first used: a run without subagents never makes a SubagentUsage.
    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)


class ResultUsage(_Frozen):
    """Token accounting for the whole run."""

    prompt_tokens: int = 0
    """Tokens of the last request's prompt (how much of the context window is in use)."""

    completion_tokens: int = 0
    """Tokens the model generated over all requests."""

    context_window: int = 0
    """Tokens shared by prompt and response (0 when no request was made)."""

    tokens_per_second: float | None = None
    """Generated tokens per second of streaming, over all requests (null: unknown)."""

    tokens_per_forward: float | None = None
    """Tokens per denoising forward pass, for a backend that reports steps (null: unknown)."""

    blocks: int = 0
    """Blocks the model committed over all requests."""

    forwards: int | None = None
    """Denoising forward passes over all requests, for a backend that reports steps."""

    cached_tokens: int = 0
    """Prompt tokens the server read from its prompt cache, over all requests."""

    cost: float | None = 0.0
    """Money the run spent, child agents and compaction summaries included, from the
    models' prices per million tokens ([pricing.MODEL]); 0 on a local engine; null when
    a model used has no price."""


class SubagentUsage(_Frozen):
    """What one child agent (a ``task`` call) cost."""

    call_id: str
    """The parent's task call that started it."""

    agent: str
    """Its agent definition, e.g. explore."""

    tokens: int
    """Tokens it generated over all its requests."""

    duration_s: float
    """Wall-clock seconds it ran."""

    status: p.TurnStatus
    """How its turn ended: completed, failed, max_turns, timeout, max_cost or interrupted."""

    cost: float | None = 0.0
    """What its requests cost (part of usage.cost); null when its model has no price."""


class EditReport(_Frozen):
    """One edit the run made, with the tokens of it the model filled with low confidence."""

    path: Text
    """The file edited (as the tool reported it)."""

    low_confidence_tokens: int
    """Changed tokens filled below ``low_confidence`` (0 when none, or not known)."""

    low_confidence_lines: list[int]
    """Line numbers (in the file after the edit) holding them, ascending."""

    confidence_known: bool
    """Whether the engine reported fill confidences (the hf engine or a clover-code serve)."""


class TaskResult(_Frozen):
    """What a headless run ended with; one shape for success and failure."""

    type: Literal["result"] = "result"
    """Always "result" (tells this line apart from the events in stream-json)."""

    status: ResultStatus
    """success, error, limit (--max-turns, --timeout, --max-tokens or --max-cost hit) or
    interrupted (Ctrl+C, SIGTERM)."""

    exit_code: int
    """The process exit code (0, 1, 2, 3, 4, 130 or 143; see the README)."""

    result: Text
    """The final answer text; on a limit or an interruption, the partial text so far."""

    error: Text | None
    """Null on success; otherwise one sentence saying what went wrong."""

    exit_reason: ExitReason = "completed"
    """Why the run ended: completed, agent_error, output_schema (the answer never
    matched --output-schema), usage_error, blocked (a UserPromptSubmit hook refused the
    prompt; exit 1), no_engine, no_sandbox (the sandbox asked for
    cannot run), max_turns, max_tokens (the final answer was cut at the token limit),
    max_cost (the money spent reached --max-cost), output_limit (a batch task stopped
    for writing past --max-output), timeout or interrupted."""

    warnings: list[Text]
    """Problems that did not stop the run (a failed --auto-commit, a sandbox notice)."""

    session_id: Text | None
    """The session, for --resume; null when the run stopped before a session opened."""

    transcript: Text | None
    """Path of the session's JSONL transcript; null when no session opened."""

    version: str
    """clover-code's version."""

    duration_s: float
    """Wall-clock seconds from start to this result."""

    turns: int
    """Model requests made (what --max-turns counts)."""

    tool_calls: int
    """Tool calls that ran (or were refused)."""

    usage: ResultUsage
    """Token accounting."""

    patch: Text = ""
    """Unified diff of everything the run changed in the workspace since it started
    (files made by shell commands included, binary files noted as such); empty when
    nothing changed or checkpoints were off."""

    files_changed: list[Text] = []
    """Paths (relative to the workspace) the patch touches. In these paths and in
    ``patch``, a byte that is not UTF-8 is written ``\\xNN``."""

    structured_output: Annotated[Any, BeforeValidator(printable_value)] = None
    """With --output-schema: the final answer as a JSON value valid against the schema
    (null otherwise, or when it never validated)."""

    subagents: list[SubagentUsage] = []
    """One entry per child agent the run started (empty when none)."""

    edits: list[EditReport] = []
    """One entry per file edit that ran, in order, with its low-confidence tokens (so a
    bot can ask for review where the model was unsure)."""


STATUS_EXIT_CODES: dict[ResultStatus, frozenset[int]] = {
    "success": frozenset({0}),
    "error": frozenset({1, 2, 3}),
    "limit": frozenset({4}),
    "interrupted": frozenset({130, 143}),
}
"""The exit codes each status can come with."""

StreamLine = p.Event | TaskResult


def parse_stream_line(line: str | bytes) -> StreamLine:
    """One line of ``--output-format stream-json``: a protocol event or the final result."""
    data = json.loads(line)
    if isinstance(data, dict) and data.get("type") == "result":
        return TaskResult.model_validate(data)
    return p.EVENT_ADAPTER.validate_python(data)
