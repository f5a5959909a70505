"""Hook functions run where hook programs do, get the same data and are judged the
same way; what goes wrong in one is a sentence, never the session's end."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from clover_code import protocol as p
from clover_code.agent.extensions.hook_functions import HookFunction, HookReply
from clover_code.agent.extensions.hooks import HookRunner
from clover_code.agent.extensions.host_programs import HostPrograms


def runner(tmp_path: Path, event: Any, *hooks: HookFunction, events: list[p.Event]) -> HookRunner:
    return HookRunner(
        {event: list(hooks)},
        root=tmp_path,
        session_id="s1",
        transcript_path=tmp_path / "t.jsonl",
        emit=events.append,
        programs=HostPrograms(tmp_path),
    )


async def test_a_function_gets_the_payload_and_can_block(tmp_path: Path) -> None:
    seen: list[dict[str, Any]] = []

    def guard(data: dict[str, Any]) -> HookReply | None:
        seen.append(data)
        if "rm" in data["tool_input"]["command"]:
            return HookReply(decision="block", reason="no rm here")
        return None

    events: list[p.Event] = []
    hooks = runner(tmp_path, "PreToolUse", HookFunction(guard, matcher="shell"), events=events)
    ok = await hooks.run("PreToolUse", {"tool_input": {"command": "ls"}}, tool="shell")
    assert not ok.blocked
    assert seen[0]["hook_event_name"] == "PreToolUse" and seen[0]["session_id"] == "s1"
    blocked = await hooks.run("PreToolUse", {"tool_input": {"command": "rm x"}}, tool="shell")
    assert blocked.blocked and blocked.reason == "no rm here"
    other = await hooks.run("PreToolUse", {"tool_input": {"command": "rm x"}}, tool="grep")
    assert not other.blocked and len(seen) == 2  # the matcher skipped it
    ran = [e for e in events if isinstance(e, p.HookRan)]
    assert [r.outcome for r in ran] == ["ok", "blocked"]
    assert (
        ran[0].command
        == f"python:{__name__}.test_a_function_gets_the_payload_and_can_block.<locals>.guard"
    )


async def test_approve_replace_and_add_context(tmp_path: Path) -> None:
    async def rewrite(data: dict[str, Any]) -> HookReply:
        return HookReply(decision="approve", tool_input={"command": "ls -la"})

    def context(data: dict[str, Any]) -> HookReply:
        return HookReply(context=f"the prompt was {data['prompt']!r}")

    events: list[p.Event] = []
    hooks = runner(tmp_path, "PreToolUse", HookFunction(rewrite), events=events)
    outcome = await hooks.run("PreToolUse", {"tool_input": {"command": "ls"}}, tool="shell")
    assert outcome.approved and outcome.tool_input == {"command": "ls -la"}
    prompts = runner(tmp_path, "UserPromptSubmit", HookFunction(context), events=events)
    added = await prompts.run("UserPromptSubmit", {"prompt": "hi"})
    assert added.context == ["the prompt was 'hi'"]


async def test_what_goes_wrong_is_one_sentence_and_the_session_goes_on(tmp_path: Path) -> None:
    def raises(data: dict[str, Any]) -> None:
        raise RuntimeError("database down")

    async def hangs(data: dict[str, Any]) -> None:
        await asyncio.sleep(3600)

    def answers_text(data: dict[str, Any]) -> str:
        return "block"

    events: list[p.Event] = []
    hooks = runner(
        tmp_path,
        "PreToolUse",
        HookFunction(raises),
        HookFunction(hangs, timeout=0.05),
        HookFunction(answers_text),
        events=events,
    )
    outcome = await hooks.run("PreToolUse", {"tool_input": {}}, tool="shell")
    assert not outcome.blocked  # a failed hook lets the call go on, as a program's does
    failed = [e.message for e in events if isinstance(e, p.HookRan)]
    assert failed == [
        "it raised RuntimeError: database down; going on.",
        "it did not finish within 0.05 s and was stopped; going on.",
        "it returned a str, not a HookReply; going on.",
    ]
    notices = [e.text for e in events if isinstance(e, p.Notice)]
    assert len(notices) == 3 and all(n.startswith("PreToolUse hook 'python:") for n in notices)


async def test_the_function_gets_its_own_copy_of_the_data(tmp_path: Path) -> None:
    seen: list[str] = []

    def meddles(data: dict[str, Any]) -> None:
        seen.append(data["tool_input"]["command"])
        data["tool_input"]["command"] = "rm -rf /"

    payload = {"tool_input": {"command": "ls"}}
    hooks = runner(tmp_path, "PreToolUse", HookFunction(meddles), events=[])
    outcome = await hooks.run("PreToolUse", payload, tool="shell")
    assert seen == ["ls"]
    assert outcome.tool_input is None and payload["tool_input"]["command"] == "ls"
