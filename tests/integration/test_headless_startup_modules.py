"""A one-step headless run loads only what it uses.

The real command runs a task in its own process against the scripted server
(the model answers at once, no tool call); as the process exits it writes the
names in ``sys.modules``. Front ends, other commands, heavy libraries and the
parts of the agent that only a feature the run does not use needs must be
absent: each costs every start its import.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.integration.sse_server import ScriptedServer, sse_response
from tests.integration.stream_shapes import SGLangStream
from tests.waiting import within

pytestmark = pytest.mark.integration

NEVER_LOADED = (
    # Other front ends and commands.
    "clover_code.ui",
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
    # Libraries the run does not use (httpx's command-line client brings click, rich
    # and pygments).
    "textual",
    "rich",
    "pygments",
    "markdown_it",
    "click",
    "trio",
    "torch",
    "transformers",
    "docker",
    # pydantic's plugin loader reads every distribution's metadata; the command has none.
    "importlib.metadata",
    # What only a feature this run does not use needs: the shell parser (a command to
    # check), worktrees (a child agent in one), Docker's image building, installed
    # plugins, web search, --output-schema, export, fork, the session list, the flags' help.
    "tree_sitter_bash",
    "clover_code.agent.permissions.shell.parse",
    "clover_code.agent.extensions.isolation",
    "clover_code.git.worktree",
    "clover_code.git.worktree_merge",
    "clover_code.tools.sandbox.docker_setup",
    "clover_code.tools.sandbox.image",
    "clover_code.tools.sandbox.git_guard",
    "clover_code.plugins.manifest",
    "clover_code.net.search",
    "clover_code.outcome.output_schema",
    "clover_code.agent.export",
    "clover_code.agent.fork",
    "clover_code.agent.session_list",
    # The settings' field docstrings, read from their source for --help.
    "clover_code.config.field_docs",
    # What a tool call, a hook or a child agent loads when first needed: running hooks,
    # child agents' reports, applying and parsing patches, searches, web pages, the
    # language servers' protocol client.
    "clover_code.agent.extensions.hook_functions",
    "clover_code.agent.extensions.hook_process",
    "clover_code.agent.extensions.hook_calls",
    "clover_code.agent.extensions.script_retrust",
    "clover_code.agent.extensions.subagent_report",
    "clover_code.tools.patch_apply",
    "clover_code.tools.patch_parse",
    "clover_code.tools.grep_backends",
    "clover_code.net.fetch",
    "clover_code.tools.lsp.client",
    "clover_code.agent.turn.edit_confidence",
    # Compaction (a turn that fills the context window).
    "clover_code.agent.turn.compaction",
)

_RUN = """\
import atexit, os, sys

def _models(cls):
    for sub in cls.__subclasses__():
        yield sub
        yield from _models(sub)

def _write_modules():
    from pydantic import BaseModel

    names = [name for name, module in sys.modules.items() if module is not None]
    # A model that reads its field docstrings from its source as it is made.
    names += [
        "docstrings-read:" + m.__module__ + "." + m.__qualname__
        for m in _models(BaseModel)
        if m.model_config.get("use_attribute_docstrings")
    ]
    with open(os.environ["MODULES_OUT"], "w") as out:
        out.write("\\n".join(sorted(names)))

atexit.register(_write_modules)
from clover_code.cli.entry import main
main()
"""
"""The command as ``clover-code`` runs it, writing its modules as it exits."""


async def test_a_one_step_run_loads_none_of_what_it_does_not_use(
    scripted_server: ScriptedServer, tmp_path: Path
) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    scripted_server.enqueue(sse_response(SGLangStream().content("Done.").chunks()))
    modules = tmp_path / "modules.txt"
    env = {k: v for k, v in os.environ.items() if not k.startswith("CLOVER_")}
    env.update(
        XDG_DATA_HOME=str(tmp_path / "data"),
        XDG_CONFIG_HOME=str(tmp_path / "config"),
        XDG_CACHE_HOME=str(tmp_path / "cache"),
        MODULES_OUT=str(modules),
    )
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        _RUN,
        "--task",
        "Say done.",
        "--base-url",
        scripted_server.base_url,
        "--sandbox",
        "none",
        "--output-format",
        "json",
        cwd=repo,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    out, err = await within(proc.communicate(), message="the one-step run to exit")
    assert proc.returncode == 0, err.decode()
    assert b'"status":"success"' in out
    loaded = set(modules.read_text().split())
    assert "clover_code.agent.open" in loaded  # what was written is the run's
    found = sorted(
        name
        for name in NEVER_LOADED
        if name in loaded or any(m.startswith(name + ".") for m in loaded)
    )
    assert found == [], f"a one-step headless run loaded {found}"
    # pydantic's use_attribute_docstrings tokenizes the class's source as it is made and
    # looks its file up among every loaded module's; the field docs are read when shown
    # (config/field_docs.py).
    reading = sorted(name for name in loaded if name.startswith("docstrings-read:"))
    assert reading == [], f"models made in the run read their docstrings: {reading}"
