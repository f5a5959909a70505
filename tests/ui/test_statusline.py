"""The status-line command, with real scripts: what it gets on stdin, what of its output
the status bar shows, the one notice when it fails or is too slow, the throttle, and the
trust a project's command needs (checked before every run, like a hook's)."""

from __future__ import annotations

import asyncio
import json
import shlex
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from clover_code import protocol as p
from clover_code.agent.open import HookRun
from clover_code.config.load import load_settings
from clover_code.config.settings import Settings
from clover_code.ui.app import CloverApp
from clover_code.ui.options import AppOptions
from clover_code.ui.run import app_options
from clover_code.ui.statusline import StatusLine, StatusLineConfig, first_line
from clover_code.ui.widgets.notice_line import NoticeLine
from tests.ui import scenes
from tests.ui.fakes_ui import replay_app
from tests.ui.test_flows import until
from tests.ui.test_snapshots import SnapCompare, settle

SCRIPT = """\
import json, sys
data = json.load(sys.stdin)
open(sys.argv[1], "a").write(json.dumps(data) + "\\n")
ctx = data["context_window"]["used_percentage"]
print(f"\\x1b[32m{data['model']['id']}\\x1b[0m {data['approval_mode']} ctx {ctx}%"
      f"\\x1b]0;pwned\\x07\\x1b[2J\\x1b[H!")
print("a second line is not shown")
"""
BAR_SCRIPT = """\
import json, sys
d = json.load(sys.stdin)
ctx = d["context_window"]["used_percentage"]
print(f"\\x1b[1;35m{d['model']['id']}\\x1b[0m · ctx {ctx}% · \\x1b[36mmain\\x1b[0m")
"""
SPAWNER = """\
import subprocess, sys, time
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
open(sys.argv[1], "w").write(str(child.pid))
time.sleep(120)
"""


def settings_with(tmp_path: Path, repo: Path, command: str, **more: Any) -> Settings:
    values = {"sessions_dir": tmp_path / "sessions", "sandbox": "none"}
    values |= {"statusline_command": command, "statusline_interval": 50, **more}
    return load_settings(values, repo_root=repo, user_config=tmp_path / "none.toml", env={})


def app_running(settings: Settings, repo: Path) -> CloverApp:
    options = app_options(settings, repo, lambda: settings)
    return replay_app(scenes.OPEN, [scenes.tool_with_diff()], cwd=repo, options=options)


def notices(app: CloverApp) -> list[str]:
    return [str(n.text) for n in app.query(NoticeLine)]


def python(*words: str | Path) -> str:
    return shlex.join([sys.executable, *(str(w) for w in words)])


async def test_the_first_line_is_shown_with_its_colours_and_nothing_else(
    repo: Path, tmp_path: Path
) -> None:
    (tmp_path / "line.py").write_text(SCRIPT)
    log = tmp_path / "stdin.jsonl"
    app = app_running(settings_with(tmp_path, repo, python(tmp_path / "line.py", log)), repo)
    async with app.run_test(size=(120, 30)) as pilot:
        await until(pilot, lambda: app.status_bar.custom is not None, message="the line")
        shown = app.status_bar.custom
        assert shown is not None
        assert shown.plain == "clover-35b-a3b ask ctx 0.0%!"  # the other escapes are gone
        assert [str(span.style) for span in shown.spans] == ["color(2)"]  # green stays
        bar = app.status_bar.render().plain
        assert bar.startswith("clover-35b-a3b ask ctx 0.0%!") and bar.rstrip().endswith("ask")
        assert "sandbox docker" in bar  # the sandbox and approval mode always stay
    seen = json.loads(log.read_text().splitlines()[0])
    assert seen["session_id"] == scenes.STARTED.session_id
    assert seen["transcript_path"] == scenes.STARTED.transcript
    assert seen["model"] == {"id": "clover-35b-a3b", "display_name": "clover-35b-a3b"}
    assert seen["workspace"]["project_dir"] == "/work/demo" and seen["cwd"] == str(repo)
    assert seen["approval_mode"] == "ask" and seen["engine"] == "remote"
    assert set(seen["context_window"]) >= {"used_percentage", "total_input_tokens"}
    assert seen["cost"]["total_cost_usd"] == 0 and "branch" in seen["git"]  # nothing spent yet
    assert seen["jobs"] == 0 and seen["background_agents"] == 0


async def test_the_command_gets_the_money_spent(repo: Path, tmp_path: Path) -> None:
    (tmp_path / "line.py").write_text(SCRIPT)
    log = tmp_path / "stdin.jsonl"
    settings = settings_with(tmp_path, repo, python(tmp_path / "line.py", log))
    turn = [
        e.model_copy(update={"cost": 0.0125}) if isinstance(e, p.UsageReport) else e
        for e in scenes.tool_with_diff()
    ]
    app = replay_app(
        scenes.OPEN, [turn], cwd=repo, options=app_options(settings, repo, lambda: settings)
    )

    def costs() -> list[object]:
        lines = log.read_text().splitlines() if log.exists() else []
        return [json.loads(line)["cost"]["total_cost_usd"] for line in lines]

    async with app.run_test(size=(120, 30)) as pilot:
        await until(pilot, lambda: app.started is not None, message="the session")
        app.composer.input.insert("fix add")
        await pilot.press("enter")
        await until(pilot, lambda: 0.0125 in costs(), message="a run after the priced response")


async def test_a_failing_command_is_dropped_with_one_notice(repo: Path, tmp_path: Path) -> None:
    (tmp_path / "fail.py").write_text(
        "import sys\nsys.stderr.write('no jq here\\n')\nsys.exit(3)\n"
    )
    app = app_running(settings_with(tmp_path, repo, python(tmp_path / "fail.py")), repo)
    async with app.run_test(size=(120, 30)) as pilot:
        await until(
            pilot,
            lambda: any("status line command" in n for n in notices(app)),
            message="the notice",
        )
        await settle(pilot)  # the turn's events change the bar's state: no run follows
        (notice,) = [n for n in notices(app) if "status line" in n]
        assert "exited with status 3 (no jq here); it is not run again" in notice
        assert app.status_bar.custom is None and "clover-35b-a3b" in app.status_bar.render().plain
        assert app.extras.statusline is not None and app.extras.statusline.runs == 1


async def test_a_slow_command_and_its_children_are_killed_and_dropped(
    repo: Path, tmp_path: Path
) -> None:
    from tests.unit.agent.extensions.test_hooks import gone

    (tmp_path / "spawn.py").write_text(SPAWNER)
    pid_file = tmp_path / "child.pid"
    command = python(tmp_path / "spawn.py", pid_file)
    app = app_running(settings_with(tmp_path, repo, command, statusline_timeout=1), repo)
    async with app.run_test(size=(120, 30)) as pilot:
        await until(
            pilot,
            lambda: any("status line command" in n for n in notices(app)),
            message="the notice",
        )
        (notice,) = [n for n in notices(app) if "status line" in n]
        assert "did not finish within 1 s and was killed" in notice
    assert gone(int(pid_file.read_text()))


async def test_runs_are_at_least_the_interval_apart() -> None:
    """The throttle alone, with an in-process stand-in for the command's run."""
    runs: list[float] = []

    async def run(payload: Mapping[str, Any]) -> HookRun:
        runs.append(time.monotonic())
        return HookRun(0, f"run {len(runs)}\n", "")

    shown: list[str] = []
    line = StatusLine(
        StatusLineConfig("fake", run, interval=600),
        payload=dict,
        show=lambda text: shown.append(text.plain if text else ""),
        drop=shown.append,
    )
    task = asyncio.create_task(line.run())
    line.changed()
    while not shown:
        await asyncio.sleep(0)
    for _ in range(20):  # the state keeps changing
        line.changed()
        await asyncio.sleep(0)
    assert len(runs) == 1 and shown == ["run 1"]
    assert line._wanted.is_set()  # the change is kept for the next run, after the interval
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)


def test_only_colours_survive_in_the_line() -> None:
    text = first_line("\x1b[1;31mred\x1b[0m \x1b[5n\x1bPq#0\x1b\\\x07tab\there\x1b[?1049h end\r\nx")
    assert text.plain == "red tabhere end"
    assert [str(span.style) for span in text.spans] == ["bold color(1)"]  # bold red


async def test_a_projects_command_runs_only_trusted_and_with_the_trusted_bytes(
    repo: Path, tmp_path: Path
) -> None:
    script = repo / ".clover" / "status.py"
    script.parent.mkdir()
    script.write_text("print('from the project')\n")
    (repo / ".clover" / "config.toml").write_text(
        f"statusline_command = {json.dumps(python('.clover/status.py'))}\n"
    )

    def load(**trust: bool) -> Settings:
        values = {"sessions_dir": tmp_path / "sessions", "sandbox": "none"}
        return load_settings(
            values, repo_root=repo, user_config=tmp_path / "none.toml", env={}, **trust
        )

    untrusted = load()
    assert untrusted.statusline_command is None  # dropped until trusted
    assert app_options(untrusted, repo, lambda: untrusted).statusline() is None
    trusted = load(trust_project=True)
    config = app_options(trusted, repo, lambda: trusted).statusline()
    assert config is not None
    ran = await config.run({})
    assert ran.code == 0 and ran.stdout == "from the project\n"
    script.write_text("print('changed by the agent')\n")  # e.g. by a sandboxed command
    refused = await config.run({})
    assert refused.refused and ".clover/status.py changed since you trusted" in str(refused.problem)
    # In the app: dropped with the sentence naming the file.
    app = replay_app(scenes.OPEN, cwd=repo, options=AppOptions(statusline=lambda: config))
    async with app.run_test(size=(120, 30)) as pilot:
        await until(
            pilot,
            lambda: any(".clover/status.py changed" in n for n in notices(app)),
            message="the refusal",
        )


def test_the_bar_with_a_status_line(snap_compare: SnapCompare, repo: Path, tmp_path: Path) -> None:
    (tmp_path / "line.py").write_text(BAR_SCRIPT)
    app = app_running(settings_with(tmp_path, repo, python(tmp_path / "line.py")), repo)

    async def shown(pilot: Any) -> None:
        await settle(pilot)
        await until(pilot, lambda: app.status_bar.custom is not None, message="the line")
        await pilot.pause()

    assert snap_compare(app, terminal_size=(100, 24), run_before=shown)


async def test_an_installed_plugins_status_line_shows_unless_you_set_your_own(
    repo: Path, tmp_path: Path
) -> None:
    from clover_code.plugins.install import stage
    from clover_code.plugins.store import PluginStore
    from tests.plugin_files import make_plugin

    source = make_plugin(tmp_path / "src", "lint-kit")
    stage(str(source), PluginStore(), tmp_path).install()
    settings = load_settings(
        {"sessions_dir": tmp_path / "sessions", "sandbox": "none"},
        repo_root=repo,
        user_config=tmp_path / "none.toml",
        env={},
    )
    app = app_running(settings, repo)
    async with app.run_test(size=(120, 30)) as pilot:
        await until(pilot, lambda: app.status_bar.custom is not None, message="the plugin's")
        assert app.status_bar.custom is not None
        assert app.status_bar.custom.plain == "lint-kit ok"
    (tmp_path / "mine.py").write_text("print('mine')\n")
    mine = settings_with(tmp_path, repo, python(tmp_path / "mine.py"))
    app = app_running(mine, repo)
    async with app.run_test(size=(120, 30)) as pilot:
        await until(pilot, lambda: app.status_bar.custom is not None, message="your own")
        assert app.status_bar.custom is not None and app.status_bar.custom.plain == "mine"
