"""docs/reference/ is generated from the code and must be current."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from tests.paths import ROOT

SCRIPT = ROOT / "scripts" / "gen-reference"


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args], capture_output=True, text=True, check=False
    )


def test_pages_are_current() -> None:
    result = _run("--check")
    assert result.returncode == 0, result.stderr


def test_a_missing_flag_row_is_stale_and_regenerated(tmp_path: Path) -> None:
    docs = tmp_path / "reference"
    shutil.copytree(ROOT / "docs" / "reference", docs)
    page = docs / "commands.md"
    text = page.read_text()
    row = next(line for line in text.splitlines() if line.startswith("| `--tp-size`"))
    page.write_text(text.replace(row + "\n", "", 1))
    stale = _run("--check", "--docs", str(docs))
    assert stale.returncode == 1
    assert "commands.md is out of date" in stale.stderr
    assert _run("--docs", str(docs)).returncode == 0
    assert row in page.read_text()
    assert _run("--check", "--docs", str(docs)).returncode == 0
