"""Typed tool results: one model per kind, tagged in JSON, and the old untagged form still read."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from mypy import api as mypy_api

from clover_code import protocol as p
from clover_code.acp.replay import replay_updates
from clover_code.agent.transcript import load
from clover_code.outcome.result import parse_stream_line
from tests.paths import ROOT

EVERY_KIND: list[p.ToolDisplay] = [
    p.FileRead(path="a.py", start=1, end=3, total_lines=3),
    p.FileEdit(path="a.py", diff="-a\n+b\n", replacements=1),
    p.PatchApplied(diff="-a\n+b\n", paths=["a.py", "b.py"]),
    p.CommandRun(command="pytest", exit_code=None, duration=1.5, timed_out=True, sandbox="docker"),
    p.SearchResult(path=".", matches=4, files=2, backend="rg"),
    p.Listing(path="src", count=7, capped=True),
    p.McpCall(server="docs", tool="lookup"),
    p.TodoList(todo=[p.TodoItem(text="fix", status="in_progress")]),
    p.RepoMapBuilt(files=9, parsed=8, notes=["one file skipped"]),
    p.SkillLoaded(skill="release", folder=".clover/skills/release"),
    p.SubagentRun(
        call_id="c0",
        agent="explore",
        tokens=120,
        duration_s=2.5,
        status="completed",
        changed_files=["a.py"],
    ),
    p.WebPage(url="https://docs.example/a", status=200, content_type="text/html", truncated=True),
    p.WebPage(url="https://a.example/", status=302, redirect="https://b.example/"),
    p.WebSearch(query="thing docs", results=3),
]


def finished(display: object) -> p.ToolCallFinished:
    return p.ToolCallFinished.model_validate(
        {"call_id": "c1", "name": "t", "status": "ok", "result": "r", "display": display}
    )


@pytest.mark.parametrize("display", EVERY_KIND, ids=lambda d: d.kind)
def test_every_kind_round_trips_through_stream_json(display: p.ToolDisplay) -> None:
    event = p.ToolCallFinished(call_id="c1", name="t", status="ok", result="r", display=display)
    line = event.model_dump_json()
    assert json.loads(line)["display"]["kind"] == display.kind
    again = parse_stream_line(line)
    assert again == event and type(again.display) is type(display)


def test_no_display_is_null() -> None:
    event = p.ToolCallFinished(call_id="c1", name="t", status="denied", result="denied: no")
    assert event.display is None
    assert json.loads(event.model_dump_json())["display"] is None


# Display dictionaries exactly as earlier versions wrote them (no "kind").
OLD_FORMS: list[tuple[dict[str, object], p.ToolDisplay]] = [
    (
        {"path": "a.py", "start": 1, "end": 2, "total_lines": None},
        p.FileRead(path="a.py", start=1, end=2),
    ),
    ({"path": "e.py", "total_lines": 0}, p.FileRead(path="e.py", total_lines=0)),
    (
        {"path": "a.py", "diff": "-a\n", "created": True},
        p.FileEdit(path="a.py", diff="-a\n", created=True),
    ),
    (
        {"path": "a.py", "diff": "-a\n", "replacements": 2},
        p.FileEdit(path="a.py", diff="-a\n", replacements=2),
    ),
    ({"diff": "-a\n", "paths": ["a.py"]}, p.PatchApplied(diff="-a\n", paths=["a.py"])),
    (
        {
            "command": "ls",
            "description": None,
            "exit_code": 2,
            "duration": 0.5,
            "timed_out": False,
            "truncated": False,
            "sandbox": "none",
        },
        p.CommandRun(command="ls", exit_code=2, duration=0.5, sandbox="none"),
    ),
    (
        {"matches": 3, "files": 1, "backend": "python", "path": "src"},
        p.SearchResult(path="src", matches=3, files=1, backend="python"),
    ),
    ({"path": ".", "count": 4, "capped": False}, p.Listing(path=".", count=4)),
    ({"path": ".", "count": 0}, p.Listing(path=".", count=0)),
    ({"server": "docs", "tool": "lookup"}, p.McpCall(server="docs", tool="lookup")),
    (
        {"todo": [{"text": "x", "status": "done"}]},
        p.TodoList(todo=[p.TodoItem(text="x", status="done")]),
    ),
    ({"files": 3, "parsed": 2, "notes": []}, p.RepoMapBuilt(files=3, parsed=2)),
    ({"skill": "release", "folder": "s"}, p.SkillLoaded(skill="release", folder="s")),
]


@pytest.mark.parametrize(("old", "typed"), OLD_FORMS, ids=lambda v: getattr(v, "kind", ""))
def test_an_earlier_versions_untagged_display_is_read(
    old: dict[str, object], typed: p.ToolDisplay
) -> None:
    assert finished(old).display == typed


@pytest.mark.parametrize(
    "unreadable",
    [{}, {"something": "new"}, {"kind": "skill_run", "name": "x"}, {"path": "a.py", "diff": 3}],
)
def test_a_shape_this_version_cannot_read_drops_the_display_not_the_event(
    unreadable: dict[str, object],
) -> None:
    event = finished(unreadable)
    assert event.display is None and event.result == "r"


def test_an_old_transcript_still_replays_its_edit_diff(tmp_path: Path) -> None:
    call = {
        "id": "call_0",
        "type": "function",
        "function": {"name": "edit_file", "arguments": "{}"},
    }
    # Lines as an earlier version wrote them: the display is an untagged dictionary.
    lines = [
        {"kind": "meta", "id": "s1", "cwd": "/work/repo"},
        {"kind": "message", "message": {"role": "user", "content": "fix it"}},
        {"kind": "message", "message": {"role": "assistant", "content": "", "tool_calls": [call]}},
        {
            "kind": "event",
            "event": {
                "type": "tool_call_started",
                "call_id": "call_0",
                "name": "edit_file",
                "kind": "edit",
                "arguments": {"path": "a.py"},
                "summary": "a.py",
            },
        },
        {
            "kind": "message",
            "message": {"role": "tool", "tool_call_id": "call_0", "content": "Edited a.py"},
        },
        {
            "kind": "event",
            "event": {
                "type": "tool_call_finished",
                "call_id": "call_0",
                "name": "edit_file",
                "status": "ok",
                "result": "Edited a.py",
                "display": {"path": "a.py", "diff": "-a\n+b\n", "replacements": 1},
                "duration": 0.01,
            },
        },
    ]
    path = tmp_path / "s1.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    updates = [
        u.model_dump(by_alias=True, exclude_none=True)
        for u in replay_updates(load(path), Path("/work/repo"))
    ]
    end = updates[-1]
    assert end["sessionUpdate"] == "tool_call_update" and end["status"] == "completed"
    assert end["content"][0]["content"]["text"] == "```diff\n-a\n+b\n```"


FRONT_END = """\
from clover_code import protocol as p


def by_key(event: p.ToolCallFinished) -> object:
    return event.display["diff"]


def by_attribute(event: p.ToolCallFinished) -> str:
    return event.display.diff if isinstance(event.display, p.FileEdit) else ""
"""


def test_the_type_checker_refuses_reading_display_by_key(tmp_path: Path) -> None:
    # CI's mypy run covers every front end; this shows the type makes key access an error.
    module = tmp_path / "front_end.py"
    module.write_text(FRONT_END)
    config = ["--config-file", str(ROOT / "pyproject.toml")]
    out, err, status = mypy_api.run(
        [*config, "--cache-dir", str(ROOT / ".mypy_cache"), str(module)]
    )
    assert status == 1, out + err
    errors = [line for line in out.splitlines() if ": error:" in line]
    assert len(errors) == 1, out
    assert "front_end.py:5:" in errors[0] and "is not indexable" in errors[0]
