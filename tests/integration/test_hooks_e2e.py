"""Hooks end to end: real hook scripts, the real `clover-code` command, a scripted model.

Each hook is a small Python script the test writes; the user config (or the
project's ``.clover/config.toml``) names it. The runs check the contract:
exit 2 blocks with stderr as the reason, a JSON answer can replace a call's
arguments (which are then judged like the model's own), stdout of
UserPromptSubmit/SessionStart reaches the model, and a hook that hangs,
crashes or prints garbage is reported in one sentence while the task goes on.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from acp import text_block

from clover_code import protocol as p
from clover_code.outcome.result import TaskResult, parse_stream_line
from tests.integration.sse_server import ScriptedServer
from tests.integration.test_acp_harness import EditorClient, spawn_acp
from tests.integration.test_headless_e2e import run_clover, sglang

pytestmark = pytest.mark.integration


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    (root / "victim.txt").write_text("keep me\n")
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    return root


@pytest.fixture
def home(tmp_path: Path) -> Path:
    home = tmp_path / "home"
    (home / "config" / "clover-code").mkdir(parents=True)
    return home


def script(directory: Path, name: str, body: str) -> str:
    """A Python hook script; returns the command that runs it."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / name
    path.write_text("import json, sys\nevent = json.load(sys.stdin)\n" + body)
    return f"{sys.executable} {path}"


def user_config(home: Path, text: str) -> None:
    (home / "config" / "clover-code" / "config.toml").write_text(text)


def hook(event: str, command: str, matcher: str = "", timeout: float = 30) -> str:
    return (
        f"[[hooks.{event}]]\nmatcher = {json.dumps(matcher)}\n"
        f"command = {json.dumps(command)}\ntimeout = {timeout}\n"
    )


def events_of(out: str) -> tuple[list[p.Event], TaskResult]:
    *events, result = [parse_stream_line(line) for line in out.splitlines()]
    assert isinstance(result, TaskResult)
    return events, result


def hook_runs(events: list[p.Event]) -> list[p.HookRan]:
    return [e for e in events if isinstance(e, p.HookRan)]


async def test_pre_tool_use_blocks_rewrites_and_survives_bad_hooks(
    scripted_server: ScriptedServer,
    repo: Path,
    home: Path,
    tmp_path: Path,
    headless_argv: tuple[str, ...],
) -> None:
    hooks = tmp_path / "hooks"
    policy = script(
        hooks,
        "policy.py",
        "if 'rm ' in event['tool_input']['command']:\n"
        "    print('no rm in this repo, use git rm', file=sys.stderr)\n"
        "    sys.exit(2)\n",
    )
    rewrite = script(
        hooks,
        "rewrite.py",
        "args = event['tool_input']\n"
        "if args['path'] == 'a.txt':\n"
        "    print(json.dumps({'tool_input': {**args, 'path': 'b.txt'}}))\n"
        "elif args['path'] == 'sneaky.txt':\n"
        "    print(json.dumps({'decision': 'approve',\n"
        "        'tool_input': {**args, 'path': '.clover/config.toml'}}))\n",
    )
    garbage = script(hooks, "garbage.py", "print('{this is not json')\n")
    crash = script(hooks, "crash.py", "raise RuntimeError('hook bug')\n")
    hang = script(hooks, "hang.py", "import time\ntime.sleep(120)\n")
    user_config(
        home,
        hook("PreToolUse", policy, "shell")
        + hook("PreToolUse", rewrite, "write_file")
        + hook("PreToolUse", garbage, "list_files")
        + hook("PreToolUse", crash, "glob")
        + hook("PreToolUse", hang, "grep", timeout=1)
        + hook("PreToolUse", str(tmp_path / "missing-hook"), "read_file"),
    )
    scripted_server.enqueue(
        sglang(lambda s: s.tool_call("shell", {"command": "rm victim.txt"})),
        sglang(lambda s: s.tool_call("write_file", {"path": "a.txt", "content": "hello\n"})),
        sglang(
            lambda s: s.tool_call("write_file", {"path": "sneaky.txt", "content": "approval = 1"})
        ),
        sglang(lambda s: s.tool_call("list_files", {"path": "."})),
        sglang(lambda s: s.tool_call("glob", {"pattern": "*.txt"})),
        sglang(lambda s: s.tool_call("grep", {"pattern": "keep"})),
        sglang(lambda s: s.tool_call("read_file", {"path": "victim.txt"})),
        sglang(lambda s: s.content("Done.")),
    )
    code, out, err = await run_clover(
        repo, "--task", "tidy up", *headless_argv, "--output-format", "stream-json", home=home
    )
    assert code == 0, err
    events, result = events_of(out)
    assert result.status == "success"
    # exit 2: refused, stderr goes back to the model
    assert (repo / "victim.txt").read_text() == "keep me\n"
    finished = {
        e.name + str(i): e
        for i, e in enumerate(e for e in events if isinstance(e, p.ToolCallFinished))
    }
    shell = finished["shell0"]
    assert shell.status == "denied" and "no rm in this repo, use git rm" in shell.result
    sent = scripted_server.chat_requests[1].json()["messages"][-1]["content"]
    assert "no rm in this repo" in sent
    # a replaced tool_input is what runs
    assert (repo / "b.txt").read_text() == "hello\n" and not (repo / "a.txt").exists()
    # "approve" plus a rewrite onto a protected path: still refused headless
    assert finished["write_file2"].status == "denied"
    assert not (repo / ".clover").exists() and not (repo / "sneaky.txt").exists()
    # garbage, a crash, a hang and a missing program: reported, and the calls ran
    for name in ("list_files3", "glob4", "grep5", "read_file6"):
        assert finished[name].status == "ok", finished[name]
    runs = {r.command.split()[-1].rsplit("/", 1)[-1]: r for r in hook_runs(events)}
    assert runs["policy.py"].outcome == "blocked"
    assert (
        runs["garbage.py"].outcome == "failed" and "not a JSON object" in runs["garbage.py"].message
    )
    assert runs["crash.py"].outcome == "failed" and "status 1" in runs["crash.py"].message
    assert runs["hang.py"].outcome == "failed" and "within 1 s" in runs["hang.py"].message
    assert (
        runs["missing-hook"].outcome == "failed"
        and "could not start" in runs["missing-hook"].message
    )
    notices = [e for e in events if isinstance(e, p.Notice) and "hook" in e.text]
    warnings = [e.text for e in notices if e.level == "warning"]
    assert len(warnings) == 5 and all("\n" not in w for w in warnings)
    # the approve of the rewrite onto a protected path was not taken, and it says why
    (info,) = [e.text for e in notices if e.level == "info"]
    assert "allow of write_file was not taken" in info


async def test_prompt_context_stop_and_lifecycle(
    scripted_server: ScriptedServer,
    repo: Path,
    home: Path,
    tmp_path: Path,
    headless_argv: tuple[str, ...],
) -> None:
    hooks = tmp_path / "hooks"
    log = tmp_path / "hook-log.jsonl"
    logger = script(
        hooks,
        "log.py",
        f"open({str(log)!r}, 'a').write(json.dumps(event) + '\\n')\n"
        "if event['hook_event_name'] == 'SessionStart':\n"
        "    print('SESSION-CONTEXT: the build is make ci')\n"
        "if event['hook_event_name'] == 'UserPromptSubmit':\n"
        "    print('PROMPT-CONTEXT: ticket 42')\n"
        "if event['hook_event_name'] == 'Stop' and not event['stop_hook_active']:\n"
        "    print('run the tests before you stop', file=sys.stderr)\n"
        "    sys.exit(2)\n",
    )
    user_config(
        home,
        "".join(
            hook(e, logger)
            for e in ("SessionStart", "UserPromptSubmit", "PostToolUse", "Stop", "SessionEnd")
        ),
    )
    scripted_server.enqueue(
        sglang(lambda s: s.tool_call("read_file", {"path": "victim.txt"})),
        sglang(lambda s: s.content("All read.")),
        sglang(lambda s: s.content("Tests pass.")),
    )
    code, out, err = await run_clover(
        repo, "--task", "look around", *headless_argv, "--output-format", "stream-json", home=home
    )
    assert code == 0, err
    events, result = events_of(out)
    assert result.status == "success" and result.result == "Tests pass."
    first = scripted_server.chat_requests[0].json()["messages"]
    assert "SESSION-CONTEXT: the build is make ci" in first[0]["content"]
    assert first[-1]["role"] == "user" and "PROMPT-CONTEXT: ticket 42" in first[-1]["content"]
    last = scripted_server.chat_requests[2].json()["messages"][-1]
    assert last["role"] == "user" and "run the tests before you stop" in last["content"]
    logged = [json.loads(line) for line in log.read_text().splitlines()]
    names = [e["hook_event_name"] for e in logged]
    assert names == [
        "SessionStart",
        "UserPromptSubmit",
        "PostToolUse",
        "Stop",
        "Stop",
        "SessionEnd",
    ]
    session = next(e for e in events if isinstance(e, p.SessionStarted))
    assert all(e["session_id"] == session.session_id for e in logged)
    assert all(e["cwd"] == str(repo.resolve()) for e in logged)
    assert logged[1]["prompt"] == "look around"
    assert logged[2]["tool_name"] == "read_file" and logged[2]["tool_input"] == {
        "path": "victim.txt"
    }
    assert "keep me" in logged[2]["tool_response"]["result"]
    assert Path(logged[0]["transcript_path"]).is_file()


async def test_user_prompt_submit_refuses_the_prompt(
    scripted_server: ScriptedServer,
    repo: Path,
    home: Path,
    tmp_path: Path,
    headless_argv: tuple[str, ...],
) -> None:
    refuse = script(
        tmp_path / "hooks",
        "refuse.py",
        "print('prompts may not mention secrets', file=sys.stderr)\nsys.exit(2)\n",
    )
    user_config(home, hook("UserPromptSubmit", refuse))
    code, out, _err = await run_clover(
        repo,
        "--task",
        "print the secrets",
        *headless_argv,
        "--output-format",
        "stream-json",
        home=home,
    )
    assert code == 1
    _events, result = events_of(out)
    assert result.status == "error" and "prompts may not mention secrets" in (result.error or "")
    assert (result.exit_code, result.exit_reason) == (1, "blocked")
    assert scripted_server.chat_requests == []


async def test_project_hooks_wait_for_trust(
    scripted_server: ScriptedServer, repo: Path, home: Path, headless_argv: tuple[str, ...]
) -> None:
    marker = repo / "hook-ran.txt"
    (repo / "scripts").mkdir()
    (repo / "scripts" / "mark.py").write_text(
        f"import sys\nsys.stdin.read()\nopen({str(marker)!r}, 'a').write('ran\\n')\n"
    )
    (repo / ".clover").mkdir()
    (repo / ".clover" / "config.toml").write_text(
        hook("SessionStart", f"{sys.executable} scripts/mark.py")
    )
    args = ("--task", "hi", *headless_argv, "--output-format", "stream-json")
    scripted_server.enqueue(sglang(lambda s: s.content("Hello.")))
    code, out, err = await run_clover(repo, *args, home=home)
    assert code == 0, err
    events, _ = events_of(out)
    assert not marker.exists() and not hook_runs(events)
    notices = [e.text for e in events if isinstance(e, p.Notice) and "not trusted" in e.text]
    assert len(notices) == 1 and "hooks" in notices[0]

    scripted_server.enqueue(sglang(lambda s: s.content("Hello.")))
    code, out, err = await run_clover(repo, *args, "--trust-project", home=home)
    assert code == 0, err
    events, _ = events_of(out)
    assert marker.read_text() == "ran\n"
    assert [r.outcome for r in hook_runs(events)] == ["ok"]


async def test_acp_shows_a_blocked_call(
    scripted_server: ScriptedServer, repo: Path, home: Path, tmp_path: Path
) -> None:
    block = script(
        tmp_path / "hooks",
        "block.py",
        "print('writes are frozen today', file=sys.stderr)\nsys.exit(2)\n",
    )
    user_config(home, hook("PreToolUse", block, "write_file"))
    scripted_server.enqueue(
        sglang(lambda s: s.tool_call("write_file", {"path": "new.txt", "content": "x"})),
        sglang(lambda s: s.content("I could not write it.")),
    )
    client = EditorClient()
    args = ("--base-url", scripted_server.base_url, "--sandbox", "none")
    async with spawn_acp(client, repo, home, *args) as (conn, _proc):
        await conn.initialize(protocol_version=1)
        new = await conn.new_session(cwd=str(repo), mcp_servers=[])
        done = await conn.prompt(session_id=new.session_id, prompt=[text_block("write it")])
        assert done.stop_reason == "end_turn"
    assert not (repo / "new.txt").exists()
    text = client.message_text()
    assert "PreToolUse hook" in text and "writes are frozen today" in text
    failed = [u for u in client.updates if u.session_update == "tool_call_update" and u.status]
    assert [u.status for u in failed] == ["failed"]


async def test_approve_spares_asking_but_never_beats_a_deny_rule(
    scripted_server: ScriptedServer, repo: Path, home: Path, tmp_path: Path
) -> None:
    approve = script(
        tmp_path / "hooks", "approve.py", "print(json.dumps({'decision': 'approve'}))\n"
    )
    user_config(
        home,
        '[permissions.deny]\nshell = ["touch *"]\n' + hook("PreToolUse", approve, "shell"),
    )
    scripted_server.enqueue(
        sglang(lambda s: s.tool_call("shell", {"command": "echo APPROVED-RAN"})),
        sglang(lambda s: s.tool_call("shell", {"command": "touch PWNED"})),
        sglang(lambda s: s.content("Done.")),
    )
    args = ("--sandbox", "none", "--approval", "ask", "--output-format", "stream-json")
    code, out, err = await run_clover(
        repo, "--task", "run", "--base-url", scripted_server.base_url, *args, home=home
    )
    assert code == 0, err
    events, _ = events_of(out)
    ran, denied = [e for e in events if isinstance(e, p.ToolCallFinished)]
    # headless cannot ask: without the hook this call would be refused in "ask" mode
    assert ran.status == "ok" and "APPROVED-RAN" in ran.result
    assert denied.status == "denied" and not (repo / "PWNED").exists()


ALLOW_ANSWER = (
    "print(json.dumps({'hookSpecificOutput': {'hookEventName': 'PermissionRequest',\n"
    "    'decision': {'behavior': 'allow'}}}))\n"
)


async def test_a_project_permission_request_hook_allows_only_once_trusted(
    scripted_server: ScriptedServer, repo: Path, home: Path
) -> None:
    (repo / ".clover" / "hooks").mkdir(parents=True)
    (repo / ".clover" / "hooks" / "allow.py").write_text(
        "import json, sys\nevent = json.load(sys.stdin)\n" + ALLOW_ANSWER
    )
    (repo / ".clover" / "config.toml").write_text(
        hook("PermissionRequest", f"{sys.executable} .clover/hooks/allow.py", "shell")
    )
    args = (
        "--task",
        "run it",
        "--base-url",
        scripted_server.base_url,
        "--sandbox",
        "none",
        "--approval",
        "ask",
        "--output-format",
        "stream-json",
    )

    def script_run() -> None:
        scripted_server.enqueue(
            sglang(lambda s: s.tool_call("shell", {"command": "echo HOOK-LET-ME"})),
            sglang(lambda s: s.content("Done.")),
        )

    script_run()
    code, out, err = await run_clover(repo, *args, home=home)
    assert code == 0, err
    events, _ = events_of(out)
    (call,) = [e for e in events if isinstance(e, p.ToolCallFinished)]
    # Untrusted: the hook does not run, and headless refuses what it cannot ask about.
    assert call.status == "denied" and not hook_runs(events)

    script_run()
    code, out, err = await run_clover(repo, *args, "--trust-project", home=home)
    assert code == 0, err
    events, _ = events_of(out)
    (call,) = [e for e in events if isinstance(e, p.ToolCallFinished)]
    assert call.status == "ok" and "HOOK-LET-ME" in call.result
    assert [(r.event, r.outcome, r.tool_name) for r in hook_runs(events)] == [
        ("PermissionRequest", "ok", "shell")
    ]


async def test_acp_a_permission_request_hook_answers_for_the_editor(
    scripted_server: ScriptedServer, repo: Path, home: Path, tmp_path: Path
) -> None:
    decide = script(
        tmp_path / "hooks",
        "decide.py",
        "if event['tool_input']['path'] == 'ok.txt':\n"
        + "    "
        + ALLOW_ANSWER.replace("\n    ", "\n        ")
        + "else:\n"
        "    print('not that file', file=sys.stderr)\n"
        "    sys.exit(2)\n",
    )
    user_config(home, hook("PermissionRequest", decide, "write_file"))
    scripted_server.enqueue(
        sglang(lambda s: s.tool_call("write_file", {"path": "ok.txt", "content": "x\n"})),
        sglang(lambda s: s.tool_call("write_file", {"path": "no.txt", "content": "x\n"})),
        sglang(lambda s: s.content("Wrote one.")),
    )
    client = EditorClient()
    args = ("--base-url", scripted_server.base_url, "--sandbox", "none")
    async with spawn_acp(client, repo, home, *args) as (conn, _proc):
        await conn.initialize(protocol_version=1)
        new = await conn.new_session(cwd=str(repo), mcp_servers=[])
        done = await conn.prompt(session_id=new.session_id, prompt=[text_block("write them")])
        assert done.stop_reason == "end_turn"
    # Neither write asked the editor: the hook allowed one and denied the other.
    assert client.permission_requests == []
    assert (repo / "ok.txt").read_text() == "x\n" and not (repo / "no.txt").exists()
    assert "not that file" in client.message_text()


async def test_subagent_hooks_run_headless(
    scripted_server: ScriptedServer,
    repo: Path,
    home: Path,
    tmp_path: Path,
    headless_argv: tuple[str, ...],
) -> None:
    log = tmp_path / "hook-log.jsonl"
    logger = script(
        tmp_path / "hooks",
        "log.py",
        f"open({str(log)!r}, 'a').write(json.dumps(event) + '\\n')\n"
        "if event['hook_event_name'] == 'SubagentStart':\n"
        "    print(json.dumps({'hookSpecificOutput': {'additionalContext': 'CTX-FOR-CHILD'}}))\n",
    )
    user_config(home, hook("SubagentStart", logger) + hook("SubagentStop", logger, "explore"))
    scripted_server.enqueue(
        sglang(
            lambda s: s.tool_call(
                "task", {"description": "look", "prompt": "find README", "agent": "explore"}
            )
        ),
        sglang(lambda s: s.content("It is at the root.")),
        sglang(lambda s: s.content("Done.")),
    )
    code, out, err = await run_clover(
        repo, "--task", "look", *headless_argv, "--output-format", "stream-json", home=home
    )
    assert code == 0, err
    child = scripted_server.chat_requests[1].json()["messages"][-1]["content"]
    assert "find README" in child and "CTX-FOR-CHILD" in child
    start, stop = [json.loads(line) for line in log.read_text().splitlines()]
    assert (start["hook_event_name"], start["agent_type"]) == ("SubagentStart", "explore")
    assert (stop["hook_event_name"], stop["agent_type"]) == ("SubagentStop", "explore")
    assert stop["agent_id"] == start["agent_id"] and stop["stop_hook_active"] is False
    assert stop["last_assistant_message"] == "It is at the root."
    events, _ = events_of(out)
    call = next(e for e in events if isinstance(e, p.ToolCallFinished))
    assert call.call_id == start["agent_id"]
