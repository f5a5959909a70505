"""One headless turn end to end against a real, independently written server:
llama-cpp-python's OpenAI-compatible server serving Gemma-3-270M."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from clover_code import protocol as p
from clover_code.outcome.result import parse_stream_line
from tests.integration.llama_peer import LlamaServer

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def test_headless_turn_against_llama_cpp(llama_server: LlamaServer, tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "README.md").write_text("# demo\n")
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("CLOVER_")}
    env.update(XDG_DATA_HOME=str(tmp_path / "data"), XDG_CONFIG_HOME=str(tmp_path / "config"))
    # A small model on two CPU cores: keep each response short.
    env["CLOVER_MAX_TOKENS"] = "48"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "clover_code",
            "--task",
            "Reply with one short sentence greeting the user.",
            "--base-url",
            llama_server.base_url,
            "--max-turns",
            "3",
            "--output-format",
            "stream-json",
        ],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )
    *events, _result = [parse_stream_line(line) for line in done.stdout.splitlines()]
    finished = [e for e in events if isinstance(e, p.TurnFinished)]
    assert finished, done.stderr
    # A 270M model may answer or call a tool; either way the turn must end
    # cleanly within its limits and the output must be real model text.
    assert finished[0].status in ("completed", "max_turns"), done.stderr
    assert done.returncode in (0, 4)
    blocks = [e for e in events if isinstance(e, p.BlockCommitted)]
    assert blocks and all(b.token_count >= 1 for b in blocks)
    assert sum(b.token_count for b in blocks[:-1]) == 32 * (len(blocks) - 1)
    usage = [e for e in events if isinstance(e, p.UsageReport)]
    assert usage and usage[0].completion_tokens > 0
    sessions = list((tmp_path / "data/clover-code/sessions").glob("*.jsonl"))
    records = [json.loads(line) for line in sessions[0].read_text().splitlines()]
    assert any(r.get("message", {}).get("role") == "assistant" for r in records)
