"""PermissionRequest, SubagentStart and SubagentStop: real hook programs and hook
functions in a session on a scripted backend."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from clover_code import protocol as p
from clover_code.agent.extensions.hook_functions import HookFunction, HookReply
from clover_code.config.load import load_settings
from clover_code.config.settings import Settings
from tests.fakes import ScriptedBackend, text_response, tool_response
from tests.sessions import open_session

ALLOW = {"hookSpecificOutput": {"hookEventName": "PermissionRequest", "decision": {}}}


def answering(tmp_path: Path, log: Path, answer: dict[str, Any] | None) -> str:
    """A hook program that logs its event and prints ``answer`` (None: nothing)."""
    script = tmp_path / "hook.py"
    printed = f"print({json.dumps(json.dumps(answer))})\n" if answer is not None else ""
    script.write_text(
        "import json, sys\nevent = json.load(sys.stdin)\n"
        f"open({str(log)!r}, 'a').write(json.dumps(event) + '\\n')\n" + printed
    )
    return f"{sys.executable} {script}"


def decision(behavior: str, **more: Any) -> dict[str, Any]:
    """Claude Code's PermissionRequest answer."""
    return {
        "hookSpecificOutput": {
            "hookEventName": "PermissionRequest",
            "decision": {"behavior": behavior, **more},
        }
    }


def logged(log: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def finished_calls(events: list[p.Event]) -> list[p.ToolCallFinished]:
    return [e for e in events if isinstance(e, p.ToolCallFinished)]


async def test_an_allow_runs_a_call_headless_would_refuse(
    make_settings: Callable[..., Settings], repo: Path, tmp_path: Path
) -> None:
    log = tmp_path / "log.jsonl"
    hooks = {
        "PermissionRequest": [
            {"matcher": "shell", "command": answering(tmp_path, log, decision("allow"))}
        ]
    }
    backend = ScriptedBackend(
        [
            tool_response(("shell", {"command": "echo HOOK-ALLOWED"})),
            tool_response(("write_file", {"path": "new.txt", "content": "x\n"})),
            text_response("done"),
        ]
    )
    events: list[p.Event] = []
    session = await open_session(
        make_settings(hooks=hooks), backend, repo, events, approval_mode="ask"
    )
    await session.run_turn("go")
    await session.close()
    shell, write = finished_calls(events)
    assert shell.status == "ok" and "HOOK-ALLOWED" in shell.result
    # The matcher names shell only: the write was asked about, and headless refused it.
    assert write.status == "denied" and not (repo / "new.txt").exists()
    (event,) = logged(log)
    assert event["hook_event_name"] == "PermissionRequest"
    assert event["tool_name"] == "shell"
    assert event["tool_input"] == {"command": "echo HOOK-ALLOWED"}
    assert event["session_id"] == session.id and event["cwd"] == str(repo.resolve())


async def test_a_deny_refuses_with_its_message_and_no_answer_asks(
    make_settings: Callable[..., Settings], repo: Path, tmp_path: Path
) -> None:
    deny = tmp_path / "deny.py"
    deny.write_text(
        "import json, sys\nevent = json.load(sys.stdin)\n"
        "if 'rm' in event['tool_input']['command']:\n"
        "    print(json.dumps({'hookSpecificOutput': {'hookEventName': 'PermissionRequest',\n"
        "        'decision': {'behavior': 'deny', 'message': 'never rm here'}}}))\n"
        "elif 'two' in event['tool_input']['command']:\n"
        "    print('exit two says no', file=sys.stderr)\n"
        "    sys.exit(2)\n"
    )
    hooks = {"PermissionRequest": [{"command": f"{sys.executable} {deny}"}]}
    backend = ScriptedBackend(
        [
            tool_response(("shell", {"command": "rm app.py"})),
            tool_response(("shell", {"command": "echo two"})),
            tool_response(("shell", {"command": "echo three"})),
            text_response("done"),
        ]
    )
    events: list[p.Event] = []
    answers: list[str] = []

    class Recording:
        shows_diff = False

        async def request(self, request: Any) -> Any:
            from clover_code.agent.permissions.approval import Decision

            answers.append(request.arguments["command"])
            return Decision(allowed=True)

    session = await open_session(
        make_settings(hooks=hooks),
        backend,
        repo,
        events,
        approval_mode="ask",
        approver=Recording(),
    )
    await session.run_turn("go")
    await session.close()
    rm, two, three = finished_calls(events)
    assert rm.status == "denied" and "never rm here" in rm.result
    assert (repo / "app.py").exists()
    assert two.status == "denied" and "exit two says no" in two.result
    sent = [m["content"] for m in backend.requests[1].messages if m["role"] == "tool"]
    assert "denied by a PermissionRequest hook: never rm here" in sent[-1]
    # No decision: the user (here the approver) is asked as usual, and only then.
    assert three.status == "ok" and answers == ["echo three"]


async def test_an_allow_never_beats_a_deny_rule_a_protected_path_or_an_unchecked_command(
    make_settings: Callable[..., Settings], repo: Path, tmp_path: Path
) -> None:
    log = tmp_path / "log.jsonl"
    hooks = {"PermissionRequest": [{"command": answering(tmp_path, log, decision("allow"))}]}
    settings = make_settings(hooks=hooks, permissions={"deny": {"shell": ["touch *"]}})
    backend = ScriptedBackend(
        [
            tool_response(("shell", {"command": "touch DENIED"})),
            tool_response(("write_file", {"path": ".clover/config.toml", "content": "x = 1\n"})),
            # A program known only at run time could be a denied one.
            tool_response(("shell", {"command": "p=touch; $p HIDDEN"})),
            text_response("done"),
        ]
    )
    events: list[p.Event] = []
    session = await open_session(settings, backend, repo, events, approval_mode="ask")
    await session.run_turn("go")
    await session.close()
    assert [c.status for c in finished_calls(events)] == ["denied", "denied", "denied"]
    assert not (repo / "DENIED").exists() and not (repo / "HIDDEN").exists()
    assert not (repo / ".clover").exists()
    # The deny rule refused at once; the other two were asked about, and the allow
    # was not taken (a notice says why).
    assert [e["tool_name"] for e in logged(log)] == ["write_file", "shell"]
    notes = [e.text for e in events if isinstance(e, p.Notice) and "was not taken" in e.text]
    assert len(notes) == 2


async def test_an_allow_stays_within_the_administrators_max_approval(
    repo: Path, tmp_path: Path
) -> None:
    managed = tmp_path / "managed.toml"
    managed.write_text('[limits]\nmax_approval = "auto-edit"\n')
    log = tmp_path / "log.jsonl"
    hooks = {"PermissionRequest": [{"command": answering(tmp_path, log, decision("allow"))}]}
    settings = load_settings(
        {"sessions_dir": tmp_path / "sessions", "sandbox": "none", "hooks": hooks},
        user_config=tmp_path / "no-user.toml",
        env={"CLOVER_MANAGED_SETTINGS": str(managed)},
    )
    backend = ScriptedBackend(
        [
            tool_response(("write_file", {"path": "edit.txt", "content": "x\n"})),
            tool_response(("shell", {"command": "touch RAN"})),
            text_response("done"),
        ]
    )
    events: list[p.Event] = []
    session = await open_session(settings, backend, repo, events, approval_mode="ask")
    await session.run_turn("go")
    await session.close()
    write, shell = finished_calls(events)
    # auto-edit runs edits without asking, so an allow may spare asking for one...
    assert write.status == "ok" and (repo / "edit.txt").exists()
    # ...but not for a command: auto-edit would ask, so headless refuses it.
    assert shell.status == "denied" and not (repo / "RAN").exists()


async def test_a_hook_function_answers_like_a_program(
    make_settings: Callable[..., Settings], repo: Path
) -> None:
    seen: list[dict[str, Any]] = []

    def allow_echo(event: dict[str, Any]) -> HookReply:
        seen.append(event)
        if event["tool_input"]["command"].startswith("echo"):
            return HookReply(decision="approve")
        return HookReply(decision="block", reason="only echo")

    backend = ScriptedBackend(
        [
            tool_response(("shell", {"command": "echo FN-ALLOWED"})),
            tool_response(("shell", {"command": "touch nope"})),
            text_response("done"),
        ]
    )
    events: list[p.Event] = []
    session = await open_session(
        make_settings(),
        backend,
        repo,
        events,
        approval_mode="ask",
        hooks={"PermissionRequest": [HookFunction(allow_echo)]},
    )
    await session.run_turn("go")
    await session.close()
    echo, touch = finished_calls(events)
    assert echo.status == "ok" and "FN-ALLOWED" in echo.result
    assert touch.status == "denied" and "only echo" in touch.result
    assert [e["hook_event_name"] for e in seen] == ["PermissionRequest"] * 2


async def _rewritten(
    settings: Settings, repo: Path, command: str = "echo hi"
) -> tuple[p.ToolCallFinished, list[p.Event]]:
    """A shell call ``command`` in ask mode, headless; its end and the session's events."""
    backend = ScriptedBackend(
        [tool_response(("shell", {"command": command})), text_response("done")]
    )
    events: list[p.Event] = []
    session = await open_session(settings, backend, repo, events, approval_mode="ask")
    await session.run_turn("go")
    await session.close()
    (call,) = finished_calls(events)
    return call, events


def _notices(events: list[p.Event]) -> list[str]:
    return [e.text for e in events if isinstance(e, p.Notice)]


async def test_an_allow_that_changes_the_input_runs_the_changed_call(
    make_settings: Callable[..., Settings], repo: Path, tmp_path: Path
) -> None:
    log = tmp_path / "log.jsonl"
    answer = decision("allow", updatedInput={"command": "touch REWRITTEN"})
    hooks = {"PermissionRequest": [{"command": answering(tmp_path, log, answer)}]}
    call, events = await _rewritten(make_settings(hooks=hooks), repo)
    # The changed call was judged again (full-auto would run it) and ran instead.
    assert call.status == "ok" and (repo / "REWRITTEN").exists()
    assert "a PermissionRequest hook changed the shell call: touch REWRITTEN" in _notices(events)
    (ran,) = [e for e in events if isinstance(e, p.HookRan)]
    assert ran.outcome == "ok"
    (event,) = logged(log)
    assert event["tool_input"] == {"command": "echo hi"}  # the hook saw the model's call


async def test_a_changed_input_still_meets_the_deny_rules_and_the_limits(
    make_settings: Callable[..., Settings], repo: Path, tmp_path: Path
) -> None:
    log = tmp_path / "log.jsonl"
    to_denied = decision("allow", updatedInput={"command": "touch DENIED"})
    hooks = {"PermissionRequest": [{"command": answering(tmp_path, log, to_denied)}]}
    settings = make_settings(hooks=hooks, permissions={"deny": {"shell": ["touch *"]}})
    call, _ = await _rewritten(settings, repo)
    assert call.status == "denied" and call.result.startswith("refused:")
    assert not (repo / "DENIED").exists()
    # Arguments the tool cannot take are refused as the model's would be.
    (tmp_path / "bad").mkdir()
    bad = decision("allow", updatedInput={"command": 42})
    hooks = {"PermissionRequest": [{"command": answering(tmp_path / "bad", log, bad)}]}
    call, _ = await _rewritten(make_settings(hooks=hooks), repo)
    assert call.status == "denied"
    assert "a PermissionRequest hook gave invalid arguments" in call.result


async def test_a_changed_input_past_the_administrators_limit_is_asked_about(
    make_settings: Callable[..., Settings], repo: Path, tmp_path: Path
) -> None:
    managed = tmp_path / "managed.toml"
    managed.write_text('[limits]\nmax_approval = "auto-edit"\n')
    log = tmp_path / "log.jsonl"
    answer = decision("allow", updatedInput={"command": "touch LIMITED"})
    hooks = {"PermissionRequest": [{"command": answering(tmp_path, log, answer)}]}
    settings = load_settings(
        {"sessions_dir": tmp_path / "sessions", "sandbox": "none", "hooks": hooks},
        user_config=tmp_path / "no-user.toml",
        env={"CLOVER_MANAGED_SETTINGS": str(managed)},
    )
    call, events = await _rewritten(settings, repo)
    # auto-edit asks before a command: the changed call was asked about, and headless
    # refused it; the hook ran once (not again for the changed call).
    assert call.status == "denied" and not (repo / "LIMITED").exists()
    assert any("allow of shell was not taken" in text for text in _notices(events))
    assert len(logged(log)) == 1


async def test_changed_input_without_an_allow_is_ignored(
    make_settings: Callable[..., Settings], repo: Path, tmp_path: Path
) -> None:
    log = tmp_path / "log.jsonl"
    answer = {"hookSpecificOutput": {"updatedInput": {"command": "touch SNEAKY"}}}
    hooks = {"PermissionRequest": [{"command": answering(tmp_path, log, answer)}]}
    call, events = await _rewritten(make_settings(hooks=hooks), repo)
    assert call.status == "denied" and not (repo / "SNEAKY").exists()
    (ran,) = [e for e in events if isinstance(e, p.HookRan)]
    assert ran.outcome == "failed" and "updatedInput came without an allow" in ran.message


async def test_no_permission_request_when_nothing_is_asked(
    make_settings: Callable[..., Settings], repo: Path, tmp_path: Path
) -> None:
    log = tmp_path / "log.jsonl"
    hooks = {"PermissionRequest": [{"command": answering(tmp_path, log, decision("deny"))}]}
    backend = ScriptedBackend(
        [
            tool_response(("write_file", {"path": "a.txt", "content": "x\n"})),
            text_response("done"),
        ]
    )
    events: list[p.Event] = []
    session = await open_session(make_settings(hooks=hooks), backend, repo, events)
    await session.run_turn("go")  # auto-edit: the write runs without asking
    await session.close()
    assert [c.status for c in finished_calls(events)] == ["ok"]
    assert logged(log) == []


def _task(prompt: str, agent: str = "general") -> tuple[str, dict[str, Any]]:
    return "task", {"description": "look", "prompt": prompt, "agent": agent}


async def test_subagent_start_adds_context_and_subagent_stop_sends_it_back(
    make_settings: Callable[..., Settings], repo: Path, tmp_path: Path
) -> None:
    log = tmp_path / "log.jsonl"
    script = tmp_path / "child.py"
    script.write_text(
        "import json, sys\nevent = json.load(sys.stdin)\n"
        f"open({str(log)!r}, 'a').write(json.dumps(event) + '\\n')\n"
        "if event['hook_event_name'] == 'SubagentStart':\n"
        "    print(json.dumps({'hookSpecificOutput': {'hookEventName': 'SubagentStart',\n"
        "        'additionalContext': 'CHILD-CONTEXT: use ripgrep'}}))\n"
        "elif not event['stop_hook_active']:\n"
        "    print(json.dumps({'decision': 'block', 'reason': 'check the tests too'}))\n"
    )
    command = f"{sys.executable} {script}"
    hooks = {
        "SubagentStart": [{"matcher": "general", "command": command}],
        "SubagentStop": [{"matcher": "gen.*", "command": command}],
    }
    backend = ScriptedBackend(
        [
            tool_response(_task("find the bug")),
            text_response("found it"),
            text_response("tests checked too"),
            text_response("all done"),
        ]
    )
    events: list[p.Event] = []
    session = await open_session(make_settings(hooks=hooks), backend, repo, events)
    finished = await session.run_turn("go")
    await session.close()
    assert finished.status == "completed"
    child_first = backend.requests[1].messages[-1]
    assert child_first["role"] == "user"
    assert "find the bug" in child_first["content"]
    assert "CHILD-CONTEXT: use ripgrep" in child_first["content"]
    child_again = backend.requests[2].messages[-1]
    assert child_again["role"] == "user" and "check the tests too" in child_again["content"]
    (task,) = finished_calls(events)
    assert task.result == "tests checked too"
    start, stop, stop_again = logged(log)
    call_id = task.call_id
    assert start["hook_event_name"] == "SubagentStart"
    assert (start["agent_id"], start["agent_type"]) == (call_id, "general")
    assert start["prompt"] == "find the bug"
    assert stop["hook_event_name"] == "SubagentStop" and stop["stop_hook_active"] is False
    assert (stop["agent_id"], stop["agent_type"]) == (call_id, "general")
    assert stop["last_assistant_message"] == "found it"
    assert stop["agent_transcript_path"] == str(session.transcript.path)
    assert stop_again["stop_hook_active"] is True
    assert stop_again["last_assistant_message"] == "tests checked too"


async def test_subagent_hooks_match_agent_names(
    make_settings: Callable[..., Settings], repo: Path, tmp_path: Path
) -> None:
    log = tmp_path / "log.jsonl"
    command = answering(tmp_path, log, None)
    hooks = {
        "SubagentStart": [{"matcher": "explore", "command": command}],
        "SubagentStop": [{"matcher": "explore", "command": command}],
    }
    backend = ScriptedBackend(
        [tool_response(_task("x", agent="general")), text_response("seen"), text_response("ok")]
    )
    session = await open_session(make_settings(hooks=hooks), backend, repo, [])
    await session.run_turn("go")
    await session.close()
    assert logged(log) == []


async def test_a_pre_tool_use_approve_never_clears_a_command_the_deny_rules_cannot_check(
    make_settings: Callable[..., Settings], repo: Path, tmp_path: Path
) -> None:
    approve = tmp_path / "approve.py"
    approve.write_text("import json\nprint(json.dumps({'decision': 'approve'}))\n")
    hooks = {"PreToolUse": [{"command": f"{sys.executable} {approve}"}]}
    settings = make_settings(hooks=hooks, permissions={"deny": {"shell": ["touch *"]}})
    backend = ScriptedBackend(
        [
            tool_response(("shell", {"command": "echo APPROVED"})),
            tool_response(("shell", {"command": "p=touch; $p HIDDEN"})),
            text_response("done"),
        ]
    )
    events: list[p.Event] = []
    session = await open_session(settings, backend, repo, events, approval_mode="ask")
    await session.run_turn("go")
    await session.close()
    echo, hidden = finished_calls(events)
    assert echo.status == "ok" and "APPROVED" in echo.result
    assert hidden.status == "denied" and not (repo / "HIDDEN").exists()
