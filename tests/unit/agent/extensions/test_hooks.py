"""The hook runner with real programs: process groups killed on timeout and on
interruption, argv split without a shell, every run reported."""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

from clover_code import protocol as p
from clover_code.agent.extensions.hooks import HookRunner
from clover_code.agent.extensions.host_programs import HostPrograms
from clover_code.config.settings import HookConfig, Settings
from clover_code.fs.named_files import snapshot
from tests.fakes import ScriptedBackend, text_response
from tests.unit.agent.turn.test_agent_loop import open_session
from tests.waiting import async_wait_until

SPAWNER = """\
import subprocess, sys, time
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
open(sys.argv[1], "w").write(str(child.pid))
time.sleep(120)
"""


def runner(tmp_path: Path, config: HookConfig, events: list[p.Event]) -> HookRunner:
    # The scripts the tests write in the workspace are trusted as they are now.
    scripts = [f.name for f in tmp_path.iterdir() if f.is_file()]
    return HookRunner(
        {"PreToolUse": [config]},
        root=tmp_path,
        session_id="s1",
        transcript_path=tmp_path / "t.jsonl",
        emit=events.append,
        programs=HostPrograms(tmp_path, trusted=snapshot(tmp_path, scripts)),
    )


def gone(pid: int) -> bool:
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        # A killed child of ours stays a zombie until reaped; /proc says so.
        state = (
            Path(f"/proc/{pid}/stat").read_text().split()[2]
            if Path(f"/proc/{pid}").exists()
            else "X"
        )
        if state in ("Z", "X"):
            return True
        time.sleep(0.05)
    return False


async def test_a_hanging_hook_and_its_children_are_killed(tmp_path: Path) -> None:
    (tmp_path / "spawn.py").write_text(SPAWNER)
    pid_file = tmp_path / "child.pid"
    events: list[p.Event] = []
    config = HookConfig(command=f"{sys.executable} spawn.py '{pid_file}'", timeout=1)
    outcome = await runner(tmp_path, config, events).run("PreToolUse", {}, tool="shell")
    assert not outcome.blocked
    assert gone(int(pid_file.read_text()))
    (ran,) = [e for e in events if isinstance(e, p.HookRan)]
    assert ran.outcome == "failed" and "within 1 s" in ran.message


async def test_an_interrupted_hook_is_killed(tmp_path: Path) -> None:
    (tmp_path / "spawn.py").write_text(SPAWNER)
    pid_file = tmp_path / "child.pid"
    config = HookConfig(command=f"{sys.executable} spawn.py {pid_file}", timeout=60)
    task = asyncio.create_task(runner(tmp_path, config, []).run("PreToolUse", {}, tool="x"))
    while not pid_file.exists() or not pid_file.read_text():
        await asyncio.sleep(0.05)
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    assert task.cancelled()
    assert gone(int(pid_file.read_text()))


async def test_arguments_are_words_not_shell_text(tmp_path: Path) -> None:
    (tmp_path / "args.py").write_text(
        "import sys, json\nprint(json.dumps({'reason': '|'.join(sys.argv[1:])}))\n"
    )
    events: list[p.Event] = []
    config = HookConfig(command=f"{sys.executable} args.py 'two words' '$(touch pwned)' ;")
    outcome = await runner(tmp_path, config, events).run("PreToolUse", {}, tool="shell")
    assert not outcome.blocked and not (tmp_path / "pwned").exists()
    (ran,) = [e for e in events if isinstance(e, p.HookRan)]
    assert ran.message == "two words|$(touch pwned)|;"


async def test_the_matcher_is_a_full_match(tmp_path: Path) -> None:
    events: list[p.Event] = []
    config = HookConfig(matcher="shell|write_file", command=f"{sys.executable} -c pass")
    hooks = runner(tmp_path, config, events)
    await hooks.run("PreToolUse", {}, tool="shell_helper")
    assert events == []
    await hooks.run("PreToolUse", {}, tool="write_file")
    assert [e.outcome for e in events if isinstance(e, p.HookRan)] == ["ok"]


async def test_pre_compact_runs_before_a_compaction(
    make_settings: Callable[..., Settings], repo: Path, tmp_path: Path
) -> None:
    log = tmp_path / "log.jsonl"
    (tmp_path / "log.py").write_text(
        f"import sys\nopen({str(log)!r}, 'a').write(sys.stdin.read() + '\\n')\n"
    )
    hooks = {"PreCompact": [{"command": f"{sys.executable} {tmp_path / 'log.py'}"}]}
    long = "an answer long enough that a summary is shorter. " * 20
    backend = ScriptedBackend([text_response(long), text_response(long)], summary="S")
    session = await open_session(make_settings(hooks=hooks), backend, repo, [])
    await session.run_turn("first")
    await session.run_turn("second")
    await session.agent.compact()
    await session.close()
    (logged,) = [json.loads(line) for line in log.read_text().splitlines()]
    assert logged["hook_event_name"] == "PreCompact" and logged["trigger"] == "manual"
    assert logged["session_id"] == session.id


def test_a_bad_matcher_is_one_config_error(tmp_path: Path) -> None:
    import pytest

    from clover_code.config.load import load_settings
    from clover_code.errors import ConfigError

    user = tmp_path / "config.toml"
    user.write_text('[[hooks.PreToolUse]]\nmatcher = "shell("\ncommand = "x"\n')
    with pytest.raises(ConfigError, match="matcher is not a regular expression"):
        load_settings(user_config=user, env={})
    user.write_text('[[hooks.AfterEverything]]\ncommand = "x"\n')
    with pytest.raises(ConfigError, match="hooks"):
        load_settings(user_config=user, env={})


def test_trusted_project_hooks_run_after_the_users(tmp_path: Path) -> None:
    from clover_code.config.load import load_settings
    from clover_code.config.settings import trust

    (tmp_path / "repo" / ".clover").mkdir(parents=True)
    (tmp_path / "repo" / ".clover" / "config.toml").write_text(
        '[[hooks.PreToolUse]]\ncommand = "project-check"\n'
    )
    user = tmp_path / "user.toml"
    user.write_text('[[hooks.PreToolUse]]\ncommand = "my-policy"\n[[hooks.Stop]]\ncommand = "s"\n')
    store = trust.TrustStore(tmp_path / "store.json")

    def commands(**kw: bool) -> dict[str, list[str]]:
        s = load_settings(repo_root=tmp_path / "repo", user_config=user, env={}, store=store, **kw)
        return {event: [h.command for h in hooks] for event, hooks in s.hooks.items()}

    assert commands() == {"PreToolUse": ["my-policy"], "Stop": ["s"]}  # not trusted yet
    trusted = commands(trust_project=True)
    assert trusted == {"PreToolUse": ["my-policy", "project-check"], "Stop": ["s"]}


async def test_a_post_tool_use_reason_reaches_the_model_and_the_event(
    make_settings: Callable[..., Settings], repo: Path, tmp_path: Path
) -> None:
    from tests.fakes import tool_response

    (repo / "a.py").write_text("x = 1\n")
    (tmp_path / "lint.py").write_text(
        "import json\nprint(json.dumps({'decision': 'block', 'reason': 'lint: x is unused'}))\n"
    )
    hooks = {"PostToolUse": [{"command": f"{sys.executable} {tmp_path / 'lint.py'}"}]}
    backend = ScriptedBackend([tool_response(("read_file", {"path": "a.py"})), text_response("ok")])
    events: list[p.Event] = []
    session = await open_session(make_settings(hooks=hooks), backend, repo, events)
    await session.run_turn("read a.py")
    await session.close()
    seen = next(m for m in backend.requests[1].messages if m["role"] == "tool")["content"]
    (finished,) = [e for e in events if isinstance(e, p.ToolCallFinished)]
    assert "[PostToolUse hook] lint: x is unused" in seen
    assert "[PostToolUse hook] lint: x is unused" in finished.result


async def test_a_notify_op_runs_the_notification_hooks_it_matches(
    make_settings: Callable[..., Settings], repo: Path, tmp_path: Path
) -> None:
    log = tmp_path / "notified.jsonl"
    (tmp_path / "log.py").write_text(
        f"import sys\nopen({str(log)!r}, 'a').write(sys.stdin.read() + '\\n')\n"
    )
    command = f"{sys.executable} {tmp_path / 'log.py'}"
    hooks = {
        "Notification": [
            {"matcher": "permission_prompt", "command": command},
            {"command": command},  # no matcher: every notification
        ]
    }
    backend = ScriptedBackend([text_response("done")])
    events: list[p.Event] = []
    session = await open_session(make_settings(hooks=hooks), backend, repo, events)
    await session.submit(
        p.Notify(message="clover-code is waiting for your input", notification_type="idle_prompt")
    )
    await session.submit(
        p.Notify(message="clover-code needs your permission to use shell",
                 notification_type="permission_prompt")
    )  # fmt: skip

    await async_wait_until(
        lambda: len([e for e in events if isinstance(e, p.HookRan)]) == 3,
        message="the three matching Notification hooks to run",
    )
    await session.close()
    logged = [json.loads(line) for line in log.read_text().splitlines()]
    assert sorted(entry["notification_type"] for entry in logged) == [
        "idle_prompt",
        "permission_prompt",
        "permission_prompt",
    ]
    first = logged[0]
    assert first["hook_event_name"] == "Notification" and first["title"] == "clover-code"
    assert first["session_id"] == session.id and first["cwd"] == str(repo)
    assert Path(first["transcript_path"]).is_file() and "message" in first
    assert all(e.outcome == "ok" for e in events if isinstance(e, p.HookRan))
