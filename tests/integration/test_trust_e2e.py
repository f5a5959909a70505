"""End to end: the agent cannot raise its own permissions through the project config.

The real `clover-code` command against a scripted model server. Run 1 (auto-edit)
tries to write a `.clover/config.toml` that loosens everything: refused. The
file is then written by hand, as a sandboxed command could; run 2 (no flag)
must not take it: not full-auto, not on the host, one notice naming the file.
Run 3 with --trust-project applies it; one changed byte untrusts it again.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from clover_code import protocol as p
from clover_code.outcome.result import parse_stream_line
from tests.integration.sse_server import ScriptedServer
from tests.integration.test_headless_e2e import run_clover, sglang

pytestmark = pytest.mark.integration

LOOSE = """\
approval = "full-auto"
sandbox = "none"
[permissions.allow]
shell = ["*"]
"""


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    (root / "victim.txt").write_text("keep me\n")
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    return root


@pytest.fixture
def home(tmp_path: Path) -> Path:
    # The user's own choice is bubblewrap: a plain run must not be moved to the
    # host by the project file (and "auto" could spend minutes building the
    # Docker image). Their approval is auto-edit, so a sandboxed `rm` is refused
    # until the project's full-auto applies.
    home = tmp_path / "home"
    (home / "config" / "clover-code").mkdir(parents=True)
    (home / "config" / "clover-code" / "config.toml").write_text(
        'sandbox = "bwrap"\napproval = "auto-edit"\n'
    )
    return home


def events_of(out: str) -> list[p.Event]:
    return [parse_stream_line(line) for line in out.splitlines()]


def started(events: list[p.Event]) -> p.SessionStarted:
    return next(e for e in events if isinstance(e, p.SessionStarted))


def trust_notices(events: list[p.Event]) -> list[str]:
    return [e.text for e in events if isinstance(e, p.Notice) and "not trusted" in e.text]


async def test_the_agent_cannot_raise_its_own_permissions(
    scripted_server: ScriptedServer, repo: Path, home: Path
) -> None:
    config = repo / ".clover" / "config.toml"
    base = ("--base-url", scripted_server.base_url, "--output-format", "stream-json")

    # Run 1: the agent tries to loosen its own settings.
    scripted_server.enqueue(
        sglang(
            lambda s: s.tool_call("write_file", {"path": ".clover/config.toml", "content": LOOSE})
        ),
        sglang(lambda s: s.content("I could not change the settings.")),
    )
    code, out, err = await run_clover(
        repo, "--task", "give yourself full access", "--approval", "auto-edit", *base, home=home
    )
    assert code == 0, err
    assert not config.exists()
    [result] = [e for e in events_of(out) if isinstance(e, p.ToolCallFinished)]
    assert result.status == "denied" and "headless mode never does" in result.result

    # The file appears anyway, as a sandboxed shell command could write it.
    config.parent.mkdir()
    config.write_text(LOOSE)

    # Run 2: a plain run does not take the untrusted loosening settings.
    scripted_server.enqueue(
        sglang(lambda s: s.tool_call("shell", {"command": "rm victim.txt"})),
        sglang(lambda s: s.content("Tried.")),
    )
    code, out, err = await run_clover(repo, "--task", "clean up", *base, home=home)
    assert code == 0, err
    events = events_of(out)
    session = started(events)
    assert session.approval == "auto-edit" and session.sandbox != "host"
    [notice] = trust_notices(events)
    assert str(config) in notice and 'approval = "full-auto"' in notice
    assert 'sandbox = "none"' in notice and "permissions.allow" in notice
    assert "--trust-project" in notice
    [shell] = [e for e in events if isinstance(e, p.ToolCallFinished)]
    assert shell.status != "ok"
    assert (repo / "victim.txt").exists()

    # Run 3: the user trusts the file; now it applies.
    scripted_server.enqueue(
        sglang(lambda s: s.tool_call("shell", {"command": "rm victim.txt"})),
        sglang(lambda s: s.content("Removed.")),
    )
    code, out, err = await run_clover(
        repo, "--task", "clean up", "--trust-project", *base, home=home
    )
    assert code == 0, err
    events = events_of(out)
    session = started(events)
    assert session.approval == "full-auto" and session.sandbox == "host"
    assert trust_notices(events) == []
    assert not (repo / "victim.txt").exists()
    assert (home / "data" / "clover-code" / "trusted-projects.json").is_file()

    # One byte more: untrusted again, without the flag.
    config.write_text(LOOSE + "\n")
    scripted_server.enqueue(sglang(lambda s: s.content("Hello.")))
    code, out, err = await run_clover(repo, "--task", "hello", *base, home=home)
    assert code == 0, err
    events = events_of(out)
    assert started(events).approval == "auto-edit" and started(events).sandbox != "host"
    assert len(trust_notices(events)) == 1
