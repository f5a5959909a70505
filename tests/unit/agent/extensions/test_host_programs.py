"""Which workspace files a host command names, and the check against trust.

Real files, real hook runs: a command that names a workspace file runs only
with the bytes the user trusted; a user-level command never resolves into
the workspace; what the shell parser cannot follow is refused.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from clover_code import protocol as p
from clover_code.agent.extensions.hooks import HookRunner
from clover_code.agent.extensions.host_programs import (
    HostPrograms,
    Prepared,
    Refused,
    checked_servers,
)
from clover_code.config.project_files import ProjectJudge
from clover_code.config.settings import HookConfig, McpServerConfig
from clover_code.config.trust import TrustStore
from clover_code.fs.named_files import snapshot, workspace_files
from clover_code.git.safe import git_argv, run_git
from clover_code.tools.grep import GrepArgs, grep_files
from clover_code.tools.mcp_config import DeclaredServer
from clover_code.tools.workspace import Workspace


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / ".clover" / "hooks").mkdir(parents=True)
    (root / "tools").mkdir()
    (root / ".venv" / "bin").mkdir(parents=True)
    (root / ".clover" / "hooks" / "check.sh").write_text("echo check\n")
    (root / "tools" / "x.py").write_text("print('x')\n")
    tool = root / ".venv" / "bin" / "mytool"
    tool.write_text("#!/bin/sh\necho tool\n")
    tool.chmod(0o755)
    return root


@pytest.fixture
def cfg(tmp_path: Path) -> Path:
    folder = tmp_path / "config"
    (folder / "scripts").mkdir(parents=True)
    check = folder / "scripts" / "policy-check"
    check.write_text("#!/bin/sh\necho user policy\n")
    check.chmod(0o755)
    return folder


def programs(ws: Path, cfg: Path, *trusted: str) -> HostPrograms:
    path_env = f"{ws / '.venv' / 'bin'}{os.pathsep}/usr/bin{os.pathsep}/bin"
    return HostPrograms(ws, trusted=snapshot(ws, trusted), user_dir=cfg, path_env=path_env)


# The words that name workspace files: program, script argument, bash -c body,
# a link, PATH inside the workspace, a script outside .clover.
NAMED = [
    (["sh", ".clover/hooks/check.sh"], ".clover/hooks/check.sh"),
    (["python3", "tools/x.py"], "tools/x.py"),
    (["bash", "-c", "sh .clover/hooks/check.sh && echo ok"], ".clover/hooks/check.sh"),
    (["bash", "-c", "cd . && python3 ./tools/x.py"], "tools/x.py"),
    (["env", "A=1", "python3", "tools/x.py"], "tools/x.py"),
    (["timeout", "5", "sh", ".clover/hooks/check.sh"], ".clover/hooks/check.sh"),
    (["python3", "link.py"], "tools/x.py"),
    (["mytool"], ".venv/bin/mytool"),
]


@pytest.mark.parametrize(("argv", "rel"), NAMED)
def test_a_named_workspace_file_runs_only_as_trusted(
    ws: Path, cfg: Path, argv: list[str], rel: str
) -> None:
    (ws / "link.py").symlink_to("tools/x.py")
    command = " ".join(argv)
    assert rel in workspace_files(command, ws, programs(ws, cfg).path_env)
    assert isinstance(programs(ws, cfg, rel).prepare(argv), Prepared)
    refused = programs(ws, cfg).prepare(argv)  # not covered by trust
    assert isinstance(refused, Refused) and rel in refused.reason
    trusted = programs(ws, cfg, rel)
    (ws / rel).write_text((ws / rel).read_text() + "evil\n")  # one line more
    result = trusted.prepare(argv)
    assert isinstance(result, Refused)
    assert result.changed == rel and f"{rel} changed since you trusted" in result.reason


def test_a_link_in_the_workspace_pointing_outside_is_covered(ws: Path, cfg: Path) -> None:
    outside = ws.parent / "outside.py"
    outside.write_text("print('outside')\n")
    (ws / "tools" / "out.py").symlink_to(outside)
    assert "tools/out.py" in workspace_files("python3 tools/out.py", ws, "/usr/bin")
    box = programs(ws, cfg, "tools/out.py")
    assert isinstance(box.prepare(["python3", "tools/out.py"]), Prepared)
    outside.write_text("print('retargeted')\n")
    assert isinstance(box.prepare(["python3", "tools/out.py"]), Refused)


UNCLEAR = [
    ["bash", "-c", "eval $(cat tools/x.py)"],
    ["bash", "-c", "$(cat name) arg"],
    ["bash", "-c", "source tools/x.py"],
    ["sh", "-c", "f() { echo; }; f"],
    ["bash"],  # reads a script from standard input
]


@pytest.mark.parametrize("argv", UNCLEAR)
def test_a_command_the_parser_cannot_follow_is_refused(
    ws: Path, cfg: Path, argv: list[str]
) -> None:
    result = programs(ws, cfg, "tools/x.py").prepare(argv)
    assert isinstance(result, Refused) and "cannot be fully checked" in result.reason


def test_plain_commands_outside_the_workspace_run(ws: Path, cfg: Path) -> None:
    box = programs(ws, cfg)
    for argv in (["echo", "hi"], [sys.executable, "-c", "print('a/b')"], ["bash", "-c", "id"]):
        assert isinstance(box.prepare(argv), Prepared), argv


# Item 2: a user-level command never resolves into the workspace.
USER_INTO_WORKSPACE = [
    ["./scripts/policy-check-missing"],
    ["scripts/run"],
    ["python3", "hooks/missing.py"],
    ["python3", "missing.py"],
    ["bash", "-c", "./scripts/run"],
]


@pytest.mark.parametrize("argv", USER_INTO_WORKSPACE)
def test_a_user_command_that_would_resolve_into_the_workspace_is_refused(
    ws: Path, cfg: Path, argv: list[str]
) -> None:
    result = programs(ws, cfg).prepare(argv)
    assert isinstance(result, Refused)
    assert "config folder" in result.reason or "workspace" in result.reason


def test_relative_user_paths_resolve_against_the_config_folder(ws: Path, cfg: Path) -> None:
    # The repository's own scripts/policy-check is the attacker's: never run.
    (ws / "scripts").mkdir()
    (ws / "scripts" / "policy-check").write_text("#!/bin/sh\necho pwned\n")
    (ws / "scripts" / "policy-check").chmod(0o755)
    (cfg / "hook.py").write_text("print('mine')\n")
    box = programs(ws, cfg)
    result = box.prepare(["./scripts/policy-check"])
    assert isinstance(result, Prepared)
    assert result.argv == [str(cfg / "scripts" / "policy-check")]
    result = box.prepare(["python3", "hook.py", "arg"])
    assert isinstance(result, Prepared) and result.argv[1:] == [str(cfg / "hook.py"), "arg"]


def test_path_entries_inside_the_workspace_are_not_searched_or_passed_on(
    ws: Path, cfg: Path
) -> None:
    box = programs(ws, cfg)
    assert str(ws) not in box.clean_path()
    refused = box.prepare(["mytool"])  # only .venv/bin has it: the workspace's
    assert isinstance(refused, Refused) and ".venv/bin/mytool" in refused.reason
    system = Path("/usr/bin/env")
    shadow = ws / ".venv" / "bin" / "env"
    shadow.write_text("#!/bin/sh\necho pwned\n")
    shadow.chmod(0o755)
    result = box.prepare(["env"])
    assert isinstance(result, Prepared) and result.argv == [str(system)]
    assert str(ws) not in result.path_env


def test_mcp_stdio_servers_are_checked_like_hooks(ws: Path, cfg: Path) -> None:
    def server(name: str, *args: str) -> DeclaredServer:
        return DeclaredServer(name, McpServerConfig(command="python3", args=list(args)), "x")

    notes: list[str] = []
    box = programs(ws, cfg, "tools/x.py")
    (ws / "tools" / "srv.py").write_text("print('untrusted')\n")
    kept = checked_servers(
        [server("ok", "tools/x.py"), server("new", "tools/srv.py")], box, ws, notes
    )
    assert [s.name for s in kept] == ["ok"]
    assert "MCP server 'new' was not started" in notes[0] and "tools/srv.py" in notes[0]
    (ws / "tools" / "x.py").write_text("print('changed')\n")
    notes.clear()
    assert checked_servers([server("ok", "tools/x.py")], box, ws, notes) == []
    assert "tools/x.py changed" in notes[0]


def test_the_trust_fingerprint_covers_the_named_scripts(ws: Path, tmp_path: Path) -> None:
    (ws / ".clover" / "config.toml").write_text(
        '[[hooks.PreToolUse]]\ncommand = "python3 tools/x.py"\n'
        '[mcp_servers.s]\ncommand = "sh"\nargs = [".clover/hooks/check.sh"]\n'
    )
    store = TrustStore(tmp_path / "trust.json")
    _, report = ProjectJudge(ws, store, record=True).read({}, {}, {}, "CLOVER_")
    (config,) = report.files
    assert config.trusted
    assert dict(config.scripts) == snapshot(ws, ["tools/x.py", ".clover/hooks/check.sh"])
    _, again = ProjectJudge(ws, store).read({}, {}, {}, "CLOVER_")
    assert again.files[0].trusted
    (ws / "tools" / "x.py").write_text("print('changed')\n")
    _, changed = ProjectJudge(ws, store).read({}, {}, {}, "CLOVER_")
    assert not changed.files[0].trusted and changed.trusted_scripts() == {}
    notice = changed.notice()
    assert notice is not None and "with the scripts it names: " in notice
    assert "tools/x.py" in notice


async def test_a_refused_hook_does_not_run_and_blocks_its_call(ws: Path, cfg: Path) -> None:
    marker = ws.parent / "ran"
    (ws / "tools" / "x.py").write_text(f"open({str(marker)!r}, 'w').write('ran')\n")
    box = programs(ws, cfg, "tools/x.py")
    (ws / "tools" / "x.py").write_text(f"open({str(marker)!r}, 'w').write('pwned')\n")
    events: list[p.Event] = []
    hooks = HookRunner(
        {"PreToolUse": [HookConfig(command=f"{sys.executable} tools/x.py")]},
        root=ws,
        session_id="s",
        transcript_path=ws.parent / "t.jsonl",
        emit=events.append,
        programs=box,
    )
    outcome = await hooks.run("PreToolUse", {"tool_input": {}}, tool="shell")
    assert not marker.exists()
    assert outcome.blocked and "tools/x.py changed" in outcome.reason
    (ran,) = [e for e in events if isinstance(e, p.HookRan)]
    assert ran.outcome == "refused" and "tools/x.py changed" in ran.message
    (notice,) = [e for e in events if isinstance(e, p.Notice)]
    assert notice.level == "warning" and "tools/x.py" in notice.text


def fake_program(folder: Path, name: str, marker: Path) -> None:
    program = folder / name
    program.write_text(f"#!/bin/sh\necho pwned > {marker}\nexit 1\n")
    program.chmod(0o755)


async def test_grep_never_runs_an_rg_the_workspace_put_on_path(
    ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    marker = ws.parent / "rg-ran"
    fake_program(ws / ".venv" / "bin", "rg", marker)
    monkeypatch.setenv("PATH", f"{ws / '.venv' / 'bin'}{os.pathsep}{os.environ['PATH']}")
    await grep_files(Workspace(ws), GrepArgs(pattern="check"), backend="auto")
    assert not marker.exists()


def test_hardened_git_never_runs_a_git_the_workspace_put_on_path(
    ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    marker = ws.parent / "git-ran"
    fake_program(ws / ".venv" / "bin", "git", marker)
    monkeypatch.setenv("PATH", f"{ws / '.venv' / 'bin'}{os.pathsep}{os.environ['PATH']}")
    run_git("init", "-q", cwd=ws, check=False)
    run_git("status", cwd=ws, check=False)
    assert not marker.exists()
    assert not git_argv(["status"], cwd=ws)[0].startswith(str(ws))
