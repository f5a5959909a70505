"""A command whose optional dependency is not installed says which extra to install.

"Not installed" is made real for the child process: a folder first on its
``PYTHONPATH`` holds a module of that name that fails to import exactly as a
missing package does (``ModuleNotFoundError`` naming it).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration


def without(tmp_path: Path, *modules: str) -> dict[str, str]:
    shadow = tmp_path / "not-installed"
    shadow.mkdir(exist_ok=True)
    for name in modules:
        (shadow / f"{name}.py").write_text(
            f"raise ModuleNotFoundError({f'No module named {name!r}'!r}, name={name!r})\n"
        )
    env = {k: v for k, v in os.environ.items() if not k.startswith("CLOVER_")}
    env.update(
        PYTHONPATH=str(shadow),
        XDG_DATA_HOME=str(tmp_path / "data"),
        XDG_CONFIG_HOME=str(tmp_path / "config"),
    )
    return env


@pytest.mark.parametrize(
    ("args", "missing", "extra"),
    [
        (["--engine", "hf", "--model-path", "{ckpt}", "--task", "hi"], ["torch"], "local"),
        (["--engine", "hf", "--model-path", "{ckpt}", "--task", "hi"], ["transformers"], "local"),
        (["serve", "--model-path", "{ckpt}"], ["torch", "uvicorn"], "local"),
        (["--engine", "sglang", "--model-path", "{ckpt}", "--task", "hi"], ["sglang"], "sglang"),
        (["web"], ["textual_serve"], "web"),
    ],
)
def test_one_sentence_naming_the_extra(
    tmp_path: Path, args: list[str], missing: list[str], extra: str
) -> None:
    ckpt = tmp_path / "ckpt"
    ckpt.mkdir()
    (ckpt / "config.json").write_text("{}")
    argv = [a.replace("{ckpt}", str(ckpt)) for a in args]
    work = tmp_path / "work"  # beside the XDG folders: no workspace may hold them
    work.mkdir()
    done = subprocess.run(
        [sys.executable, "-P", "-m", "clover_code", *argv],
        cwd=work,
        env=without(tmp_path, *missing),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert f"pip install 'clover-code[{extra}]'" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
