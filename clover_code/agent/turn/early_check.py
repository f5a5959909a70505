"""Which tool calls may start before the response that makes them has ended."""

from __future__ import annotations

import logging

from clover_code.agent.turn.dispatch import ToolDispatcher
from clover_code.agent.turn.options import TurnOptions
from clover_code.agent.turn.tool_call import ToolCall

__all__ = ["EARLY_KINDS", "may_start_early"]

log = logging.getLogger(__name__)

EARLY_KINDS = frozenset({"read", "search", "fetch"})
"""The tool kinds whose calls may start early: they read (an MCP tool is ``read`` only
when the user vouched for it; ``fetch`` still obeys the web tools' own rules)."""


def may_start_early(dispatch: ToolDispatcher, call: ToolCall, turn: TurnOptions) -> bool:
    """Whether ``call`` may run before its response has ended: a well-formed call of a
    reading tool that ``turn`` offers and the approval mode and rules would run without
    asking anyone."""
    tool = dispatch.tools.get(call.name)
    if tool is None or tool.kind not in EARLY_KINDS or call.parse_error:
        return False
    offered = dispatch.offered(turn)
    if offered is not None and tool.name not in offered:
        return False
    dispatch.screen([call])
    if call.problem:
        return False
    try:
        args = tool.Args.model_validate(call.arguments)
        return dispatch.verdict(tool, args) == "allow"
    except Exception:
        # Whatever is wrong is reported when the call runs in its turn, after the response.
        log.debug("the early check of %s failed", call.name, exc_info=True)
        return False
