"""The ``todo`` tool: the model's checklist for the task at hand.

Each call sends the whole list (replacing the previous one), so the list is
never out of step with what the model believes. The result's display is a
``protocol.TodoList`` of ``protocol.TodoItem``s; the agent loop turns that
into a ``TodoUpdated`` event for the front ends and keeps the latest list
across compaction (``render_todo`` writes it back into the conversation as
text).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from clover_code.errors import ToolError
from clover_code.protocol import TodoItem, TodoList, ToolDisplay
from clover_code.tools.base import Tool, ToolContext, ToolKind, ToolResult

__all__ = ["MAX_ITEMS", "TodoArgs", "TodoEntry", "TodoTool", "render_todo", "todo_from_display"]

MAX_ITEMS = 50
Status = Literal["pending", "in_progress", "done"]
_ALIASES = {
    "todo": "pending",
    "not_started": "pending",
    "in-progress": "in_progress",
    "in progress": "in_progress",
    "doing": "in_progress",
    "active": "in_progress",
    "completed": "done",
    "complete": "done",
    "finished": "done",
}
_MARKS: dict[str, str] = {"pending": "[ ]", "in_progress": "[>]", "done": "[x]"}


class TodoEntry(BaseModel):
    """One step of the plan."""

    # Built when first used: TodoArgs builds its items' schema within its own.
    model_config = ConfigDict(defer_build=True)

    text: str = Field(min_length=1, max_length=500, description="What the step is, in a few words.")
    status: Status = Field(
        "pending", description="pending, in_progress (the step being worked on) or done."
    )

    @field_validator("status", mode="before")
    @classmethod
    def _common_spellings(cls, value: Any) -> Any:
        # Models write "completed" or "in-progress" as often as the schema's words.
        if isinstance(value, str):
            key = value.strip().lower()
            return _ALIASES.get(key, key)
        return value

    @field_validator("text")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("a step needs some text")
        return value.strip()


class TodoArgs(BaseModel):
    """Arguments of todo."""

    model_config = ConfigDict(defer_build=True)
    """Built when a call is first validated (the schema is kept: ``schema_cache``)."""

    items: list[TodoEntry] = Field(
        description="The whole checklist, in order; it replaces the previous one. "
        "Send an empty list to clear it."
    )


def render_todo(items: Sequence[TodoItem | TodoEntry | Mapping[str, Any]]) -> str:
    """The checklist as text, one ``[x]`` / ``[>]`` / ``[ ]`` line per item (items
    may also be dictionaries of their fields, as the agent loop keeps them)."""
    if not items:
        return "(the checklist is empty)"
    lines = []
    for item in items:
        entry = TodoItem.model_validate(item) if isinstance(item, Mapping) else item
        lines.append(f"{_MARKS[entry.status]} {entry.text}")
    return "\n".join(lines)


def todo_from_display(display: ToolDisplay | None) -> list[TodoItem] | None:
    """The checklist a tool result carries, or None when it carries none."""
    return list(display.todo) if isinstance(display, TodoList) else None


class TodoTool(Tool[TodoArgs]):
    """Records the model's plan as a checklist the user can see."""

    name: ClassVar[str] = "todo"
    description: ClassVar[str] = (
        "Keep a checklist of the steps of a multi-step task, shown to the user. Send the "
        "whole list each time (it replaces the previous one): write it when you start, mark "
        "one step in_progress while you work on it, and mark steps done as soon as they "
        "are. Skip it for tasks of one or two steps."
    )
    kind: ClassVar[ToolKind] = "other"
    Args = TodoArgs

    def summary(self, args: TodoArgs) -> str:
        """How far the list has got."""
        done = sum(1 for item in args.items if item.status == "done")
        return f"{done}/{len(args.items)} done"

    async def run(self, args: TodoArgs, ctx: ToolContext) -> ToolResult:
        """Replace the checklist and echo it back."""
        if len(args.items) > MAX_ITEMS:
            raise ToolError(
                f"the checklist has {len(args.items)} items, more than {MAX_ITEMS}; "
                "group small steps together"
            )
        active = sum(1 for item in args.items if item.status == "in_progress")
        items = [TodoItem(text=item.text, status=item.status) for item in args.items]
        text = "Checklist updated:\n" + render_todo(items)
        if active > 1:
            text += f"\nNote: {active} steps are in_progress; keep one at a time where you can."
        return ToolResult(text, display=TodoList(todo=items))
