"""The core never loads Textual, and headless start-up stays light, at run time.

Which module may import which is checked statically by the import-linter
contracts in pyproject.toml (``lint-imports``); this test covers what they
cannot see: the heavy packages a real import of the entry points loads.
"""

from __future__ import annotations

import subprocess
import sys

CORE_MODULES = [
    "clover_code.protocol",
    "clover_code.config.settings",
    "clover_code.config.flags",
    "clover_code.fs.ignore",
    "clover_code.engine.remote.backend",
    "clover_code.engine.qwen3.parser",
    "clover_code.agent.session",
    "clover_code.agent.turn.loop",
    "clover_code.tools.registry",
    "clover_code.headless.run",
    "clover_code.cli.main",
    "clover_code.engine.select",
    "clover_code.engine.local.hf",
    "clover_code.engine.local.sglang",
    "clover_code.serve.main",
]


def test_core_does_not_load_textual_or_heavy_modules() -> None:
    code = (
        "import sys\n"
        + "".join(f"import {m}\n" for m in CORE_MODULES)
        + "heavy = [m for m in ('textual', 'torch', 'sglang', 'transformers', 'docker', 'numpy')"
        " if m in sys.modules]\n"
        "print(','.join(heavy))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert out == "", f"the core loaded {out}"


def test_the_command_loads_no_optional_library_it_never_uses() -> None:
    # httpx loads its command-line client (click, rich, pygments) and httpcore
    # loads trio whenever they are installed; the command blocks both, and the
    # repo map's numpy waits for a map to rank.
    code = (
        "import sys\n"
        "from clover_code.cli.main import block_unused_imports\n"
        "block_unused_imports()\n"
        "import clover_code.headless.run, clover_code.engine.remote.backend, httpx, httpcore\n"
        "httpx.AsyncClient()\n"
        "print(','.join(m for m in ('click', 'rich', 'pygments', 'trio', 'numpy')"
        " if sys.modules.get(m) is not None))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert out == "", f"the command loaded {out}"
