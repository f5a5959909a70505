"""The approval mode ``sandbox-auto``: edits run, commands run without asking only
where the sandbox contains them (Docker or bubblewrap without network), otherwise
it is auto-edit. Deny rules, read-only and plan keep their meaning."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from clover_code import protocol as p
from clover_code.agent.permissions.approval import verdict
from clover_code.agent.permissions.policy import PermissionPolicy
from clover_code.batch.main import _headless_args
from clover_code.batch.main import build_parser as batch_parser
from clover_code.cli.parser import build_parser
from clover_code.config.loosening import looser_approval
from clover_code.config.settings import PermissionRules
from clover_code.github.task import task_env
from clover_code.headless.render import TextRenderer
from clover_code.tools.mcp import McpTool
from clover_code.tools.sandbox.bwrap import BwrapSandbox
from clover_code.tools.sandbox.host import HostSandbox

DENY = PermissionRules(deny={"shell": ["rm *", "curl *"]})


def test_it_sits_between_auto_edit_and_full_auto() -> None:
    modes = p.APPROVAL_MODES
    assert modes.index("auto-edit") + 1 == modes.index("sandbox-auto")
    assert modes.index("sandbox-auto") + 1 == modes.index("full-auto")
    # A project file asking for it loosens the default, so it needs the user's trust.
    assert looser_approval("sandbox-auto", None)
    assert looser_approval("sandbox-auto", "auto-edit")
    assert not looser_approval("sandbox-auto", "full-auto")
    assert looser_approval("full-auto", "sandbox-auto")


@pytest.mark.parametrize(
    ("contained", "kind", "expected"),
    [
        (True, "execute", "allow"),
        (False, "execute", "ask"),
        (True, "edit", "allow"),
        (False, "edit", "allow"),
        (True, "fetch", "ask"),  # network egress from the host: never contained
        (True, "read", "allow"),
    ],
)
def test_verdict(contained: bool, kind: str, expected: str) -> None:
    assert verdict("sandbox-auto", kind, contained=contained) == expected  # type: ignore[arg-type]


@pytest.mark.parametrize("mode", ["read-only", "plan", "ask", "auto-edit"])
def test_containment_loosens_no_other_mode(mode: p.ApprovalMode) -> None:
    assert verdict(mode, "execute", contained=True) == verdict(mode, "execute")


def test_contained_commands_run_uncontained_ones_ask(tmp_path: Path) -> None:
    inside = PermissionPolicy(PermissionRules(), tmp_path, contained=True)
    outside = PermissionPolicy(PermissionRules(), tmp_path)
    call = {"command": "python3 -m pytest -q"}
    assert inside.decide("sandbox-auto", "shell", "execute", call).verdict == "allow"
    assert outside.decide("sandbox-auto", "shell", "execute", call).verdict == "ask"
    assert inside.decide("auto-edit", "shell", "execute", call).verdict == "ask"
    assert inside.decide("read-only", "shell", "execute", call).verdict == "deny"
    assert inside.decide("plan", "shell", "execute", call).verdict == "deny"


def test_an_mcp_tool_asks_however_contained_the_sandbox(tmp_path: Path) -> None:
    # An MCP server runs on the host (or elsewhere), never in the sandbox: sandbox-auto
    # must not treat its tools as contained commands.
    assert McpTool.runs_on_host
    inside = PermissionPolicy(PermissionRules(), tmp_path, contained=True)
    ruling = inside.decide(
        "sandbox-auto", "mcp__files__delete", "execute", {}, on_host=McpTool.runs_on_host
    )
    assert ruling.verdict == "ask"
    assert inside.decide("full-auto", "mcp__files__delete", "execute", {}).verdict == "allow"


@pytest.mark.parametrize(
    "command",
    [
        "rm -rf src",
        "pytest && rm -rf src",
        "timeout 5 rm -rf src",
        "/bin/rm -rf src",
        "echo $(curl http://evil.example)",
    ],
)
def test_deny_rules_still_refuse_in_a_sandbox(tmp_path: Path, command: str) -> None:
    policy = PermissionPolicy(DENY, tmp_path, contained=True)
    assert policy.decide("sandbox-auto", "shell", "execute", {"command": command}).verdict == (
        "deny"
    )


@pytest.mark.parametrize("command", ['eval "$X"', "$PROG -rf src", 'bash -c "$CMD"'])
def test_what_deny_rules_cannot_check_is_asked_about(tmp_path: Path, command: str) -> None:
    policy = PermissionPolicy(DENY, tmp_path, contained=True)
    assert policy.decide("sandbox-auto", "shell", "execute", {"command": command}).verdict == (
        "ask"
    )


def test_protected_files_still_need_the_user(tmp_path: Path) -> None:
    policy = PermissionPolicy(PermissionRules(), tmp_path, contained=True)
    ruling = policy.decide(
        "sandbox-auto", "write_file", "edit", {"path": ".clover/config.toml", "content": ""}
    )
    assert ruling.verdict == "ask" and ruling.protected


def test_which_sandboxes_contain(tmp_path: Path) -> None:
    assert BwrapSandbox(tmp_path).contained
    assert not BwrapSandbox(tmp_path, network=True).contained
    assert not HostSandbox(tmp_path).contained


def test_headless_and_batch_default_to_it() -> None:
    assert "sandbox-auto" in build_parser().format_help()
    args = batch_parser().parse_args(["tasks.jsonl", "--out", "out", "--base-url", "http://x/v1"])
    # Each run keeps the headless default (held to an administrator's max_approval).
    assert args.approval is None and "--approval" not in _headless_args(args)
    assert "default sandbox-auto" in " ".join(batch_parser().format_help().split())


def test_github_keeps_auto_edit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    assert task_env({"PATH": "/bin"}, "tok", tmp_path)["CLOVER_APPROVAL"] == "auto-edit"
    chosen = task_env({"CLOVER_APPROVAL": "full-auto"}, "tok", tmp_path)
    assert chosen["CLOVER_APPROVAL"] == "full-auto"


def _finished(result: str, status: str, display: p.ToolDisplay | None = None) -> p.Event:
    return p.ToolCallFinished(
        call_id="c1", name="shell", status=status, result=result, display=display
    )  # type: ignore[arg-type]


def test_text_output_says_a_refusal_once() -> None:
    err = io.StringIO()
    TextRenderer(io.StringIO(), err)(_finished("denied: shell needs approval (x)", "denied"))
    TextRenderer(io.StringIO(), err)(_finished("error: unknown tool 'shell'.", "error"))
    assert err.getvalue() == "  denied: shell needs approval (x)\n  error: unknown tool 'shell'.\n"


def test_text_output_shows_how_a_failed_command_ended() -> None:
    err = io.StringIO()
    render = TextRenderer(io.StringIO(), err)
    output = "".join(f"line {n}\n" for n in range(1, 30)) + "1 failed in 0.01s\n"
    render(p.ToolOutput(call_id="c1", text=output[:50]))
    render(p.ToolOutput(call_id="c1", text=output[50:]))
    run = p.CommandRun(command="pytest", exit_code=1)
    render(_finished(output + "exit code 1 (0.1 s)", "ok", run))
    shown = err.getvalue().splitlines()
    assert shown[0] == "  exit 1:"
    assert shown[1:] == [f"    line {n}" for n in range(21, 30)] + ["    1 failed in 0.01s"]


def test_text_output_says_nothing_of_a_command_that_passed() -> None:
    err = io.StringIO()
    render = TextRenderer(io.StringIO(), err)
    render(p.ToolOutput(call_id="c1", text="ok\n"))
    render(_finished("ok\nexit code 0 (0.1 s)", "ok", p.CommandRun(command="true", exit_code=0)))
    killed = p.CommandRun(command="sleep 9", exit_code=None, timed_out=True)
    render(_finished("timed out after 1 s", "error", killed))
    assert err.getvalue() == "  killed, timed out\n"
