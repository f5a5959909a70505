from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from clover_code.config.load import load_settings
from clover_code.config.settings import Settings


@pytest.fixture
def make_settings(tmp_path: Path) -> Callable[..., Settings]:
    """Settings isolated from the user's config and environment."""

    def make(**overrides: Any) -> Settings:
        # The host sandbox: unit tests run only scripted commands, and "auto"
        # could start building the Docker image.
        values = {"sessions_dir": tmp_path / "sessions", "sandbox": "none", **overrides}
        return load_settings(values, user_config=tmp_path / "no-user-config.toml", env={})

    return make


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A small git repository with one committed file."""
    root = tmp_path / "repo"
    root.mkdir()
    (root / "app.py").write_text("def add(a, b):\n    return a - b\n")
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    subprocess.run(["git", "add", "."], cwd=root, check=True)
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "init"],
        cwd=root,
        check=True,
    )
    return root
