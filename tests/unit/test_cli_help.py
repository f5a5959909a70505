"""``--help`` names the subcommands; an unknown config key suggests the closest one."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from clover_code.config.settings import load_settings
from clover_code.errors import ConfigError


def test_help_lists_the_subcommands() -> None:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    out = subprocess.run(
        [sys.executable, "-m", "clover_code", "--help"],
        capture_output=True,
        text=True,
        env=env,
        check=True,
        timeout=60,
    ).stdout
    for command in ("clover-code acp", "clover-code serve", "clover-code sandbox"):
        assert command in out


def test_an_unknown_key_suggests_the_closest(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / ".clover").mkdir(parents=True)
    (repo / ".clover/config.toml").write_text("blok_size = 3\n")
    with pytest.raises(ConfigError) as info:
        load_settings({}, repo_root=repo, user_config=tmp_path / "u.toml", env={})
    assert "unknown key 'blok_size'; did you mean 'block_size'?" in str(info.value)
