"""Plan mode: the model explores with read and search tools and writes a plan.

In the ``plan`` approval mode only the read/search tools and the todo list are
offered, and a call of any other tool is refused (the model may still try one
it saw earlier in the conversation). The system prompt gains a paragraph that
asks for a plan instead of changes; front ends then offer to carry it out.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from clover_code.config.settings import ApprovalMode
from clover_code.tools.base import Tool

PLAN_MODE: ApprovalMode = "plan"

PLAN_EXTRA_TOOLS = frozenset({"todo"})
"""Tools plan mode offers besides the read and search ones."""

PLAN_PROMPT = """\
# Plan mode

You are in plan mode: do not change anything. Explore the code with the read and \
search tools (the todo tool may track the steps), then answer with a plan for the \
task: the files to change, what to change in each and why, and how to check the \
result (tests to run or add). Write the plan as your final answer; the user will \
read it and decide whether to carry it out."""


def plan_tools(tools: Iterable[Tool[Any]]) -> frozenset[str]:
    """The names of the tools plan mode offers out of ``tools``."""
    return frozenset(
        t.name for t in tools if t.kind in ("read", "search") or t.name in PLAN_EXTRA_TOOLS
    )


def refusal(allowed: frozenset[str]) -> str:
    """What the model is told when it calls another tool in plan mode."""
    names = ", ".join(sorted(allowed)) or "none"
    return (
        "refused: plan mode changes nothing; it allows only these tools: "
        f"{names}. Write the plan as your answer instead."
    )
