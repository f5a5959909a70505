"""The command's first module: pydantic looks for no plugin in the command's process."""

from __future__ import annotations

import subprocess
import sys

_SCANS = """\
import sys
import importlib.metadata as metadata
calls = []
real = metadata.distributions
metadata.distributions = lambda *a, **k: calls.append(1) or real(*a, **k)
{before}
import clover_code.cli.main
from clover_code.config.settings import Settings
Settings()
print(len(calls), "importlib.metadata" in sys.modules and "imported")
"""


def _scans(before: str) -> int:
    code = _SCANS.format(before=before)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return int(out.stdout.split()[0])


_ENTRY = "from clover_code.cli.entry import ignore_pydantic_plugins\nignore_pydantic_plugins()"


def test_pydantic_reads_no_distributions_metadata_for_plugins() -> None:
    # Without the entry's call, the first model built reads every distribution's
    # entry points (the check that this test can fail).
    assert _scans("") == 1
    assert _scans(_ENTRY) == 0
    # A program that had imported pydantic's loader before: its cache says none found.
    assert _scans(f"import pydantic.plugin._loader\n{_ENTRY}") == 0


def test_the_command_does_not_import_the_metadata_reader() -> None:
    # The loader pydantic would import on its first model imports importlib.metadata
    # (about 10 ms); the command's stand-in does not.
    code = f"{_ENTRY}\nimport clover_code.cli.main\nfrom clover_code.config.settings import "
    code += "Settings\nSettings()\nimport sys\nprint('importlib.metadata' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
