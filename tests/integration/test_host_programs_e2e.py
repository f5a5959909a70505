"""The host never runs a file the sandbox or the agent could have changed (end to end).

A trusted project hook ``sh .clover/hooks/check.sh``; a full-auto session's
shell command rewrites the script (through Python, which the shell check
cannot see as a write). In Docker and bubblewrap the write fails (the
control files are mounted read-only); with ``--sandbox none`` it lands, and
the next PreToolUse hook is refused (outcome ``refused``, a warning naming
the file, the call blocked). The rewritten script never runs. The same for
an MCP stdio server script and for a script outside ``.clover`` that the
config names, changed between runs: the config is untrusted again.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from clover_code import protocol as p
from clover_code.outcome.result import TaskResult, parse_stream_line
from tests.integration.sandbox_fixtures import KINDS
from tests.integration.sse_server import ScriptedServer
from tests.integration.test_headless_e2e import run_clover, sglang

pytestmark = pytest.mark.integration

REWRITE = (
    "python3 -c \"import pathlib; p = pathlib.Path('.clover/hooks/check.sh'); "
    "p.write_text('echo pwned >> ' + {log!r} + chr(10))\"; echo rewrite-done"
)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    (root / ".clover" / "hooks").mkdir(parents=True)
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    return root


@pytest.fixture
def home(tmp_path: Path) -> Path:
    home = tmp_path / "home"
    (home / "config" / "clover-code").mkdir(parents=True)
    return home


def events_of(out: str) -> tuple[list[object], TaskResult]:
    *events, result = [parse_stream_line(line) for line in out.splitlines()]
    assert isinstance(result, TaskResult)
    return list(events), result


def sandbox_ready(kind: str, request: pytest.FixtureRequest) -> None:
    request.getfixturevalue("sandbox_image" if kind == "docker" else "bwrap_works")


@pytest.mark.parametrize("kind", [*KINDS, "none"])
async def test_a_rewritten_hook_script_never_runs(
    kind: str,
    scripted_server: ScriptedServer,
    repo: Path,
    home: Path,
    tmp_path: Path,
    request: pytest.FixtureRequest,
) -> None:
    if kind != "none":
        sandbox_ready(kind, request)
    log = tmp_path / "hook.log"
    script = repo / ".clover" / "hooks" / "check.sh"
    script.write_text(f"echo original >> {log}\n")
    (repo / ".clover" / "config.toml").write_text(
        '[[hooks.PreToolUse]]\nmatcher = "shell"\ncommand = "sh .clover/hooks/check.sh"\n'
    )
    scripted_server.enqueue(
        sglang(lambda s: s.tool_call("shell", {"command": REWRITE.format(log=str(log))})),
        sglang(lambda s: s.tool_call("shell", {"command": "echo second"})),
        sglang(lambda s: s.content("Done.")),
    )
    code, out, err = await run_clover(
        repo,
        *("--task", "go", "--base-url", scripted_server.base_url, "--trust-project"),
        *("--sandbox", kind, "--approval", "full-auto", "--output-format", "stream-json"),
        home=home,
    )
    assert code == 0, err
    events, result = events_of(out)
    assert result.status == "success"
    assert "pwned" not in log.read_text()
    runs = [e for e in events if isinstance(e, p.HookRan)]
    assert len(runs) == 2 and runs[0].outcome == "ok"
    if kind == "none":
        # The write landed; the check before the run is the protection.
        assert "pwned" in script.read_text()
        assert runs[1].outcome == "refused"
        assert ".clover/hooks/check.sh changed" in runs[1].message
        notices = [e.text for e in events if isinstance(e, p.Notice) and e.level == "warning"]
        assert any(".clover/hooks/check.sh changed" in text for text in notices)
        # The model is told too: the call its check guarded did not run.
        last = scripted_server.chat_requests[-1].json()["messages"][-1]
        assert ".clover/hooks/check.sh changed" in json.dumps(last)
    else:
        assert script.read_text() == f"echo original >> {log}\n"
        assert log.read_text() == "original\noriginal\n"
        assert runs[1].outcome == "ok"


async def test_a_changed_script_untrusts_the_config_that_names_it(
    scripted_server: ScriptedServer,
    repo: Path,
    home: Path,
    tmp_path: Path,
    headless_argv: tuple[str, ...],
) -> None:
    log = tmp_path / "mcp.log"
    tools = repo / "tools"
    tools.mkdir()
    (tools / "check.py").write_text(f"open({str(log)!r}, 'a').write('hook\\n')\n")
    (tools / "server.py").write_text(f"open({str(log)!r}, 'a').write('server\\n')\n")
    (repo / ".clover" / "config.toml").write_text(
        f'[[hooks.PreToolUse]]\ncommand = "{sys.executable} tools/check.py"\n'
    )
    (repo / ".mcp.json").write_text(
        json.dumps({"mcpServers": {"s": {"command": sys.executable, "args": ["tools/server.py"]}}})
    )
    base = [*headless_argv, "--output-format", "stream-json"]
    scripted_server.enqueue(
        sglang(lambda s: s.tool_call("shell", {"command": "echo one"})),
        sglang(lambda s: s.content("Done.")),
    )
    code, out, err = await run_clover(repo, "--task", "go", "--trust-project", *base, home=home)
    assert code == 0, err
    assert log.read_text().count("hook") == 1
    assert "server" in log.read_text()
    log.write_text("")
    # Between runs the scripts change (a pull, the agent, anyone): nothing of them runs.
    for name in ("check.py", "server.py"):
        (tools / name).write_text(f"open({str(log)!r}, 'a').write('pwned\\n')\n")
    scripted_server.enqueue(
        sglang(lambda s: s.tool_call("shell", {"command": "echo two"})),
        sglang(lambda s: s.content("Done.")),
    )
    code, out, err = await run_clover(repo, "--task", "go", *base, home=home)
    assert code == 0, err
    events, _ = events_of(out)
    assert "pwned" not in (log.read_text() if log.exists() else "")
    notices = " ".join(e.text for e in events if isinstance(e, p.Notice))
    assert "not trusted" in notices
