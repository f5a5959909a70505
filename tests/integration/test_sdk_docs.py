"""docs/sdk.md's examples, run as written in a fresh Python process.

A block marked ``<!-- sdk-test: NAME -->`` on the line before its
```` ```python ```` fence is extracted and run in ``python -c`` from a scratch
folder holding ``your-project`` (a repository whose test fails). Only what a
test machine has instead of the reader's is substituted: the model server's
URL (the scripted loopback server, answering as ``sdk_model`` scripts), and
clover-code's user folders (scratch ones).
"""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.integration.sdk_model import failing_project, model
from tests.integration.sse_server import ScriptedServer
from tests.paths import ROOT
from tests.waiting import within

pytestmark = pytest.mark.integration

PAGE = ROOT / "docs" / "sdk.md"
MARK = re.compile(r"<!-- sdk-test: ([\w-]+) -->\n```python\n(.*?)```", re.DOTALL)
URL = "http://localhost:30000/v1"


def examples() -> dict[str, str]:
    found: dict[str, str] = {}
    for name, body in MARK.findall(PAGE.read_text("utf-8")):
        assert name not in found, f"two examples are named {name}"
        found[name] = body
    return found


def test_every_example_is_tested() -> None:
    assert set(examples()) == {"run", "session", "tools"}


async def run_example(name: str, server: ScriptedServer, where: Path) -> str:
    server.responder = model  # type: ignore[assignment]
    body = examples()[name]
    assert URL in body
    env = {k: v for k, v in os.environ.items() if not k.startswith("CLOVER_")}
    env.update(XDG_CONFIG_HOME=str(where / "config"), XDG_DATA_HOME=str(where / "data"))
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        body.replace(URL, server.base_url),
        cwd=where,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    out, _ = await within(proc.communicate(), timeout=300, message=f"the {name} example")
    text = out.decode(errors="replace")
    assert proc.returncode == 0, text
    return text


async def test_run_fixes_the_test(scripted_server: ScriptedServer, tmp_path: Path) -> None:
    project = failing_project(tmp_path)
    out = await run_example("run", scripted_server, tmp_path)
    lines = out.splitlines()
    assert lines[-3:] == ["success 0", "['calc.py']", "Fixed add: it subtracted instead of adding."]
    assert (project / "calc.py").read_text() == "def add(a, b):\n    return a + b\n"


async def test_session_asks_undoes_and_switches_mode(
    scripted_server: ScriptedServer, tmp_path: Path
) -> None:
    project = failing_project(tmp_path)
    out = await run_example("session", scripted_server, tmp_path)
    assert "allowing this edit:\n--- a/calc.py\n+++ b/calc.py\n" in out
    assert "-    return a - b\n+    return a + b\n" in out
    assert "edit_file: ok\nturn: completed Fixed add: it subtracted instead of adding.\n" in out
    assert "undone: ['calc.py']\n" in out
    assert (
        "shell: denied: refused: approval mode 'read-only' does not allow execute tools "
        "such as shell." in out
    )
    assert (project / "calc.py").read_text() == "def add(a, b):\n    return a - b\n"


async def test_custom_tool_and_hook(scripted_server: ScriptedServer, tmp_path: Path) -> None:
    project = failing_project(tmp_path)
    (project / "build").mkdir()
    out = await run_example("tools", scripted_server, tmp_path)
    assert out.splitlines()[-1] == (
        "sunny and 21 °C in Paris. The build folder stays: refused by a PreToolUse hook: "
        "nothing is deleted here"
    )
    assert (project / "build").is_dir()
