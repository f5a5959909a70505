"""The todo tool: a checklist the model rewrites whole, carried to front ends in display."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from clover_code import protocol as p
from clover_code.errors import ToolError
from clover_code.tools.base import ToolContext
from clover_code.tools.todo import MAX_ITEMS, TodoArgs, TodoTool, render_todo, todo_from_display
from clover_code.tools.workspace import Workspace


@pytest.fixture
def ctx(tmp_path: Path) -> ToolContext:
    return ToolContext(workspace=Workspace(tmp_path))


async def test_list_is_replaced_and_carried_in_display(ctx: ToolContext) -> None:
    tool = TodoTool()
    args = TodoArgs.model_validate(
        {
            "items": [
                {"text": "read the failing test", "status": "done"},
                {"text": "fix the off-by-one", "status": "in_progress"},
                {"text": "run the suite"},
            ]
        }
    )
    result = await tool.run(args, ctx)
    assert not result.is_error
    assert result.text.splitlines()[1:] == [
        "[x] read the failing test",
        "[>] fix the off-by-one",
        "[ ] run the suite",
    ]
    items = todo_from_display(result.display)
    assert items is not None
    event = p.TodoUpdated(items=items)
    assert p.EVENT_ADAPTER.validate_json(event.model_dump_json()) == event
    assert [i.status for i in event.items] == ["done", "in_progress", "pending"]
    assert tool.summary(args) == "1/3 done"


@pytest.mark.parametrize(
    ("given", "status"),
    [("completed", "done"), ("In-Progress", "in_progress"), ("todo", "pending"), ("done", "done")],
)
def test_common_status_spellings(given: str, status: str) -> None:
    args = TodoArgs.model_validate({"items": [{"text": "x", "status": given}]})
    assert args.items[0].status == status


@pytest.mark.parametrize(
    "items",
    [
        [{"text": "", "status": "pending"}],
        [{"text": "   "}],
        [{"text": "x", "status": "blocked"}],
        [{"status": "done"}],
    ],
)
def test_bad_items_are_refused(items: list[dict[str, str]]) -> None:
    with pytest.raises(ValidationError):
        TodoArgs.model_validate({"items": items})


async def test_too_many_items(ctx: ToolContext) -> None:
    args = TodoArgs.model_validate({"items": [{"text": f"s{i}"} for i in range(MAX_ITEMS + 1)]})
    with pytest.raises(ToolError, match="more than 50"):
        await TodoTool().run(args, ctx)


async def test_empty_list_clears_and_several_active_get_a_note(ctx: ToolContext) -> None:
    cleared = await TodoTool().run(TodoArgs(items=[]), ctx)
    assert cleared.display == p.TodoList(todo=[])
    assert "empty" in cleared.text
    busy = TodoArgs.model_validate(
        {"items": [{"text": "a", "status": "in_progress"}, {"text": "b", "status": "doing"}]}
    )
    result = await TodoTool().run(busy, ctx)
    assert "2 steps are in_progress" in result.text


def test_render_and_display_helpers() -> None:
    assert render_todo([p.TodoItem(text="a", status="done")]) == "[x] a"
    assert render_todo([{"text": "b", "status": "in_progress"}]) == "[>] b"
    assert todo_from_display(p.FileEdit(path="a", diff="")) is None
    assert todo_from_display(None) is None


def test_spec_describes_the_items() -> None:
    spec = TodoTool().spec()
    assert spec.name == "todo"
    assert "items" in spec.parameters["properties"]
