"""docs/plugins.md's shell blocks, run as written with bash.

A block marked ``<!-- plugins-test: NAME -->`` on the line before its fence
is run line by line as a user would type it, in a scratch folder holding
``your-project``. Only what a test machine has instead of the reader's is
substituted: the model server's URL (the scripted loopback server) and
clover-code's user folders (scratch ones); ``clover-code`` is this tree's.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.integration.sdk_model import failing_project, prompt_and_results
from tests.integration.sse_server import (
    MODELS_PATH,
    RecordedRequest,
    ScriptedServer,
    json_response,
    sse_response,
)
from tests.integration.stream_shapes import SGLangStream
from tests.paths import ROOT
from tests.waiting import within

pytestmark = pytest.mark.integration

PAGE = ROOT / "docs" / "plugins.md"
MARK = re.compile(r"<!-- plugins-test: ([\w-]+) -->\n```sh\n(.*?)```", re.DOTALL)
URL = "http://localhost:30000/v1"


def blocks() -> dict[str, str]:
    return dict(MARK.findall(PAGE.read_text("utf-8")))


def test_every_block_is_tested() -> None:
    assert set(blocks()) == {"make", "use"}


def pusher(request: RecordedRequest) -> object:
    """The model: after the plugin's command, it tries a force push, then reports."""
    if request.path == MODELS_PATH:
        return json_response({"object": "list", "data": [{"id": "m", "object": "model"}]})
    prompt, results = prompt_and_results(request.json())
    stream = SGLangStream()
    if not results:
        stream.tool_call("shell", {"command": "git push --force origin main"})
    else:
        stream.content(f"prompt: {prompt} | push: {results[0]}")
    return sse_response(stream.chunks())


async def bash(body: str, cwd: Path, home: Path) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CLOVER_")}
    env.update(
        PATH=f"{Path(sys.executable).parent}:{env.get('PATH', '')}",
        XDG_CONFIG_HOME=str(home / "config"),
        XDG_DATA_HOME=str(home / "data"),
    )
    proc = await asyncio.create_subprocess_exec(
        "bash", "-e", "-c", body, cwd=cwd, env=env,
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
    )  # fmt: skip
    out, _ = await within(proc.communicate(), timeout=300, message="the docs block")
    text = out.decode(errors="replace")
    assert proc.returncode == 0, text
    return text


async def test_make_install_and_use_a_plugin(
    scripted_server: ScriptedServer, tmp_path: Path, bwrap_works: None
) -> None:
    home = tmp_path / "home"
    failing_project(tmp_path)
    made = await bash(blocks()["make"], tmp_path, home)
    plugins = home / "data" / "clover-code" / "plugins"
    assert f"hook PreToolUse (shell): {plugins / 'lint-kit' / 'hooks' / 'no-force-push'}" in made
    assert "  commands: /lint-kit:fix" in made
    assert "lint-kit 1.0.0 (enabled) from " in made
    record = json.loads((plugins / "installed.json").read_text())
    assert record["plugins"]["lint-kit"]["kind"] == "folder"
    scripted_server.responder = pusher  # type: ignore[assignment]
    used = await bash(blocks()["use"].replace(URL, scripted_server.base_url), tmp_path, home)
    assert (
        "prompt: Fix the lint errors in calc.py, then run the linter again. | push: refused "
        "by a PreToolUse hook: lint-kit: no force pushes"
    ) in used
