"""docs/security.md names real code and real tests: every test file and module it cites exists."""

from __future__ import annotations

import re

from tests.paths import ROOT

DOC = ROOT / "docs" / "security.md"


def test_every_cited_test_file_exists() -> None:
    cited = set(re.findall(r"`(tests/[\w/]+\.py)", DOC.read_text("utf-8")))
    assert len(cited) >= 40
    missing = sorted(c for c in cited if not (ROOT / c).is_file())
    assert not missing, f"docs/security.md cites missing tests: {missing}"


def test_every_cited_module_exists() -> None:
    text = DOC.read_text("utf-8")
    cited: set[str] = set()
    for group in re.findall(r"\(([^()]*\.py[^()]*)\)", text):
        cited |= set(re.findall(r"`([\w/]+\.py)", group))
    package = ROOT / "clover_code"
    missing = sorted(c for c in cited if not c.startswith("tests/") and not (package / c).is_file())
    # A bare file name stands for the module of the folder named just before it.
    missing = [m for m in missing if "/" in m or not list(package.rglob(m))]
    assert not missing, f"docs/security.md names modules that do not exist: {missing}"


def test_every_surface_of_the_issue_has_a_row() -> None:
    lines = DOC.read_text("utf-8").lower().splitlines()
    first = [line.split("|")[1] for line in lines if line.startswith("| ")]
    for surface in (
        "shell",
        "file tools",
        "hooks",
        "custom commands",
        "skills",
        "agent definitions",
        "mcp client",
        "web fetch",
        "clover-code web",
        "clover-code serve",
        "clover-code mcp-server",
        "clover-code acp",
        "github bot",
        "batch",
        "ray",
        "telemetry",
        "watch mode",
    ):
        assert any(surface in cell for cell in first), f"no row for {surface}"
