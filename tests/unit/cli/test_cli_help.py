"""``--help`` names the subcommands, each of which runs its own module; an unknown config
key suggests the closest one."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from clover_code.cli.main import run
from clover_code.cli.subcommands import SUBCOMMANDS, Subcommand
from clover_code.config.load import load_settings
from clover_code.errors import ConfigError
from tests.paths import ROOT


def test_help_lists_the_subcommands() -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
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


@pytest.mark.parametrize("command", SUBCOMMANDS, ids=lambda c: c.name)
def test_each_command_in_the_table_is_its_own_modules(
    command: Subcommand, capsys: pytest.CaptureFixture[str]
) -> None:
    try:
        code = run([command.name, "--help"])
    except SystemExit as exc:
        code = exc.code
    assert code == 0
    shown = capsys.readouterr().out
    assert shown.startswith(f"usage: clover-code {command.name}")
    assert shown == command.build_parser().format_help()


def test_an_unknown_key_suggests_the_closest(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / ".clover").mkdir(parents=True)
    (repo / ".clover/config.toml").write_text("blok_size = 3\n")
    with pytest.raises(ConfigError) as info:
        load_settings({}, repo_root=repo, user_config=tmp_path / "u.toml", env={})
    assert "unknown key 'blok_size'; did you mean 'block_size'?" in str(info.value)
