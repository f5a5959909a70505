"""A tool call as the model made it, what came of it, and how sure the model was of
the edit it wrote."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from clover_code import protocol as p
from clover_code.agent.turn.confidence import EditRater
from clover_code.protocol.confidence import EditConfidence
from clover_code.tools.base import Tool


@dataclass(slots=True)
class ToolCall:
    """A tool call as the model made it, and what came of it."""

    id: str
    name: str
    arguments: dict[str, Any]
    parse_error: str | None = None
    result: str | None = None
    malformed: bool = False
    problem: str | None = None
    """What ``ToolDispatcher.screen`` found wrong with the arguments."""
    screened: bool = False
    confidence: EditRater | None = None
    """Rates an edit's diff by the fill confidences of the tokens that wrote it."""


def rated(
    call: ToolCall, tool: Tool[Any] | None, diff: str | p.ToolDisplay | None
) -> EditConfidence | None:
    """The low-confidence tokens of the edit ``call`` made as ``diff`` (or as the diff of
    its ``FileEdit`` or ``PatchApplied`` display), looked for in the arguments ``tool``
    writes; None when not known."""
    if isinstance(diff, p.FileEdit | p.PatchApplied):
        diff = diff.diff
    if call.confidence is None or not isinstance(diff, str) or not diff:
        return None
    written = tool.written_arguments if tool is not None else frozenset()
    return call.confidence.rate(diff, written)
