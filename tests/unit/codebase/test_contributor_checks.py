"""The fast loop, its git hooks and CI run the same checks.

``scripts/check`` (the fast loop), ``.pre-commit-config.yaml`` (the same as
git hooks) and ``scripts/test`` (the full CI run) each spell out the commands;
this keeps them from drifting apart.
"""

from __future__ import annotations

import re
import shlex

import yaml

from tests.paths import ROOT


def check_steps() -> dict[str, str]:
    """The steps of scripts/check: name -> command line."""
    text = (ROOT / "scripts" / "check").read_text("utf-8")
    steps = re.findall(r'^step "([^"]+)" (.+)$', text, re.MULTILINE)
    return {name: command.strip() for name, command in steps}


def hook_entries() -> list[str]:
    config = yaml.safe_load((ROOT / ".pre-commit-config.yaml").read_text("utf-8"))
    return [hook["entry"] for repo in config["repos"] for hook in repo["hooks"]]


def normal(command: str) -> str:
    """A command line with ``--no-cache`` left out: CI builds the import graph
    afresh, the fast loop may reuse it."""
    return shlex.join(word for word in shlex.split(command) if word != "--no-cache")


def test_check_runs_every_check_of_ci_and_the_unit_tests() -> None:
    steps = check_steps()
    assert set(steps) == {"ruff", "format", "mypy", "layers", "cycles", "unit tests"}
    ci = {normal(line) for line in (ROOT / "scripts" / "test").read_text("utf-8").splitlines()}
    lint = [command for name, command in steps.items() if name != "unit tests"]
    missing = [command for command in lint if normal(command) not in ci]
    assert not missing, f"scripts/check runs what scripts/test does not: {missing}"
    assert shlex.split(steps["unit tests"])[-1] == "tests/unit"


def test_the_git_hooks_run_what_check_runs() -> None:
    entries = {normal(entry) for entry in hook_entries()}
    assert entries == {normal(command) for command in check_steps().values()}
