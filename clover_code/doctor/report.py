"""One row of the doctor's report, and how the rows are printed.

A ``Check`` is one thing a run may need: its state (``ok``, ``warn``, ``fail``
or ``info``), what was found, and the command that fixes it. ``fail`` means a
run of the default kind cannot work; ``warn`` means a feature is missing.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from typing import Literal, TextIO

__all__ = ["Check", "State", "print_json", "print_table"]

State = Literal["ok", "warn", "fail", "info"]

_MARKS: dict[str, str] = {"ok": "ok  ", "warn": "warn", "fail": "FAIL", "info": "info"}


@dataclass(frozen=True, slots=True)
class Check:
    """One thing checked."""

    area: str
    """What part of a run it belongs to: python, sandbox, model, config, gpu."""
    name: str
    state: State
    detail: str
    """What was found, one sentence."""
    fix: str = ""
    """The command (or step) that fixes it; empty when nothing needs fixing."""


def print_table(checks: Iterable[Check], out: TextIO) -> None:
    """The report for a person: one line a check, the fix indented below it."""
    rows = list(checks)
    width = max((len(c.name) for c in rows), default=0)
    area = ""
    for check in rows:
        if check.area != area:
            area = check.area
            out.write(f"\n{area}\n")
        out.write(f"  {_MARKS[check.state]}  {check.name.ljust(width)}  {check.detail}\n")
        if check.fix:
            for line in check.fix.splitlines():
                out.write(f"        {' ' * width}  -> {line}\n")
    failed = sum(c.state == "fail" for c in rows)
    warned = sum(c.state == "warn" for c in rows)
    out.write(f"\n{failed} problem(s) that stop a run, {warned} warning(s).\n")


def print_json(checks: Iterable[Check], out: TextIO) -> None:
    """The report for a program: one JSON object with every check."""
    rows = [asdict(c) for c in checks]
    ok = not any(r["state"] == "fail" for r in rows)
    out.write(json.dumps({"ok": ok, "checks": rows}, indent=1) + "\n")
