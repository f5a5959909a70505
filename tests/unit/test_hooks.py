"""The hook runner with real programs: process groups killed on timeout and on
interruption, argv split without a shell, every run reported."""

from __future__ import annotations

import asyncio
import os
import sys
import time
from pathlib import Path

from clover_code import protocol as p
from clover_code.agent.hooks import HookRunner
from clover_code.config import HookConfig

SPAWNER = """\
import subprocess, sys, time
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
open(sys.argv[1], "w").write(str(child.pid))
time.sleep(120)
"""


def runner(tmp_path: Path, config: HookConfig, events: list[p.Event]) -> HookRunner:
    return HookRunner(
        {"PreToolUse": [config]},
        root=tmp_path,
        session_id="s1",
        transcript_path=tmp_path / "t.jsonl",
        emit=events.append,
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
