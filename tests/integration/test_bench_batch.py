"""The batch bench's clover-code side runs end to end and fixes every task it makes.

A smoke run (two tasks with their test commands, one and two jobs, no sandbox,
no peer): it checks the table's rows and that each run fixed both tasks with
three requests each and passed their tests, not any timing.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]


def test_bench_batch_quick_run_prints_a_row_per_jobs_value(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CLOVER_")}
    argv = [sys.executable, str(ROOT / "bench" / "batch.py"), "--quick", "--tasks", "2"]
    argv += ["--jobs", "1,2", "--no-peer", "--sandbox", "none", "--latency", "0.05", "--tests"]
    argv += ["--cache-dir", str(tmp_path / "cache"), "--work", str(tmp_path / "work")]
    proc = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    rows = [line.split() for line in proc.stdout.splitlines() if line.startswith("none ")]
    expected = [("none", "clover-code", "1"), ("none", "clover-code", "2")]
    assert [(r[0], r[1], r[2]) for r in rows] == expected
    for row in rows:
        assert row[5] == "2/2" and row[6] == "6", row  # both fixed, three requests each
    summary = json.loads(proc.stdout.strip().splitlines()[-1])
    assert summary["tasks"] == 2 and summary["jobs"] == [1, 2]
    results = tmp_path / "work" / "clover-none-2" / "results.jsonl"
    records = [json.loads(line) for line in results.read_text().splitlines()]
    assert sorted(r["id"] for r in records) == ["t00", "t01"]
    assert all("+    return a + b" in r["result"]["patch"] for r in records)
    assert all(r["tests_passed"] is True for r in records)
