"""The command's first module: pydantic looks for no plugin in the command's process."""

from __future__ import annotations

import subprocess
import sys

_SCANS = """\
import importlib.metadata as metadata
calls = []
real = metadata.distributions
metadata.distributions = lambda *a, **k: calls.append(1) or real(*a, **k)
{before}
import clover_code.cli.main
from clover_code.config.settings import Settings
Settings()
print(len(calls))
"""


def _scans(before: str) -> int:
    code = _SCANS.format(before=before)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return int(out.stdout.strip())


def test_pydantic_reads_no_distributions_metadata_for_plugins() -> None:
    # Without the entry's call, the first model built reads every distribution's
    # entry points (the check that this test can fail).
    assert _scans("") == 1
    assert (
        _scans(
            "from clover_code.cli.entry import ignore_pydantic_plugins\nignore_pydantic_plugins()"
        )
        == 0
    )
