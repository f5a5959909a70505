"""The app shows its open session having loaded only what that needs.

The real app (``run_app``'s modules, its session factory) opens a real session
against the scripted server in a process of its own, driven by Textual's test
pilot; the moment the session is open (its status bar shows the model) the
process writes the names in ``sys.modules``. The other front ends, a turn's
machinery (streaming a response, compaction), the headless runner's result
models, the dialogs nobody opened and the parts of the core that only a tool
call or a feature needs must be absent: each would cost the app's start its
import. (The Markdown and diff renderers and the transcript's entries are warmed
in a thread once the open session is shown, so they are not checked here.)
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.integration.sse_server import ScriptedServer, json_response
from tests.waiting import within

pytestmark = pytest.mark.integration

NEVER_LOADED = (
    # Other front ends, and the headless runner with its result models.
    "clover_code.headless",
    "clover_code.outcome",
    "clover_code.acp",
    "clover_code.mcp_server",
    "clover_code.webapp",
    "clover_code.review",
    "clover_code.batch",
    "clover_code.github",
    "clover_code.sdk",
    "clover_code.serve",
    "clover_code.watch",
    "clover_code.doctor",
    "clover_code.engine.local.hf",
    "clover_code.engine.local.sglang",
    "torch",
    "docker",
    "trio",
    "click",
    # A turn: one model response, streaming it, the Qwen3 parser, early calls, compaction.
    "clover_code.agent.turn.respond",
    "clover_code.agent.turn.early_check",
    "clover_code.agent.turn.compaction",
    "clover_code.engine.remote.response",
    "clover_code.engine.remote.chunks",
    "clover_code.engine.remote.native_calls",
    "clover_code.engine.remote.sse",
    "clover_code.engine.qwen3",
    # What a tool call or a feature loads: hooks running, child agents' reports, patches,
    # searches, web pages, language servers, worktrees, the shell parser.
    "clover_code.agent.extensions.hook_functions",
    "clover_code.agent.extensions.hook_process",
    "clover_code.agent.extensions.hook_calls",
    "clover_code.agent.extensions.script_retrust",
    "clover_code.agent.extensions.subagent_report",
    "clover_code.agent.extensions.isolation",
    "clover_code.agent.checkpoints.run_patch",
    "clover_code.agent.permissions.shell.parse",
    "clover_code.tools.patch_apply",
    "clover_code.tools.patch_parse",
    "clover_code.tools.grep_backends",
    "clover_code.net.fetch",
    "clover_code.tools.lsp.client",
    "clover_code.agent.turn.edit_confidence",
    # Dialogs nobody opened, Vim's modes (the prompt edits plainly), the status-line command's
    # runner (none is configured).
    "clover_code.ui.widgets.trust",
    "clover_code.ui.widgets.choice",
    "clover_code.ui.widgets.approval",
    "clover_code.ui.widgets.confirm",
    "clover_code.ui.vim",
    "clover_code.ui.statusline",
    "clover_code.ui.review",
    "clover_code.ui.rewind",
)

_RUN = """\
import asyncio, os, sys
from pathlib import Path

from clover_code.cli.main import block_unused_imports

block_unused_imports()  # as the command does

from clover_code.config.load import load_settings
from clover_code.agent.engines import Engines
from clover_code.ui.app import CloverApp
from clover_code.ui.run import app_options, session_factory, trust_question

async def main() -> None:
    cwd = Path.cwd()
    settings = load_settings({"base_url": os.environ["BASE_URL"], "sandbox": "none"})
    question, current = trust_question(settings, None)
    assert question is None
    app = CloverApp(
        session_factory(settings, cwd, Engines(), current=current),
        cwd=cwd,
        options=app_options(settings, cwd, current),
    )
    async with app.run_test(size=(120, 36)) as pilot:
        while app.status_bar.model != os.environ["MODEL"]:
            await pilot.pause(0.01)
        names = sorted(name for name, module in sys.modules.items() if module is not None)
        Path(os.environ["MODULES_OUT"]).write_text("\\n".join(names))
        app.exit(0)

asyncio.run(main())
"""
"""The app as ``run_app`` builds it, in Textual's headless test mode, writing its
modules once the session is open."""


async def test_the_app_opens_its_session_without_what_it_does_not_use(
    scripted_server: ScriptedServer, tmp_path: Path
) -> None:
    model = "startup-modules-model"
    scripted_server.responder = lambda request: json_response(
        {"object": "list", "data": [{"id": model, "object": "model", "owned_by": "test"}]}
    )
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    modules = tmp_path / "modules.txt"
    env = {k: v for k, v in os.environ.items() if not k.startswith("CLOVER_")}
    env.update(
        XDG_DATA_HOME=str(tmp_path / "data"),
        XDG_CONFIG_HOME=str(tmp_path / "config"),
        XDG_CACHE_HOME=str(tmp_path / "cache"),
        BASE_URL=scripted_server.base_url,
        MODEL=model,
        MODULES_OUT=str(modules),
    )
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        _RUN,
        cwd=repo,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    _, err = await within(proc.communicate(), message="the app to open its session")
    assert proc.returncode == 0, err.decode()
    loaded = set(modules.read_text().split())
    assert "clover_code.agent.open" in loaded  # what was written is the open session's
    found = sorted(
        name
        for name in NEVER_LOADED
        if name in loaded or any(m.startswith(name + ".") for m in loaded)
    )
    assert found == [], f"the app's start loaded {found}"
