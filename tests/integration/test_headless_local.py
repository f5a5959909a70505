"""End to end: the real `clover-code` command on the local hf engine (tiny random stand-in).

The random model says nothing useful; what is checked is the path a real
checkpoint takes from the command line: load, render, block-diffusion decode
with drafts, stream-json out, a clean terminal, and one sentence for a bad path.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from clover_code import protocol as p
from clover_code.outcome.result import TaskResult, parse_stream_line
from tests.integration.test_headless_e2e import repo, run_clover  # noqa: F401
from tests.tiny_model import build_tiny_checkpoint

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_checkpoint(tmp_path_factory.mktemp("tiny") / "ckpt")


async def test_a_task_on_the_local_engine_streams_blocks(
    repo: Path,  # noqa: F811
    checkpoint: Path,
    tmp_path: Path,
) -> None:
    args = ("--engine", "hf", "--model-path", str(checkpoint), "--block-size", "8")
    args += ("--expert-mass", "0.9", "--decoder", "auto")
    code, out, err = await run_clover(
        repo,
        "--task",
        "say hi",
        *args,
        "--sandbox",
        "none",
        "--output-format",
        "stream-json",
        home=tmp_path,
        extra_env={"CLOVER_MAX_TOKENS": "24"},
    )
    # The answer is cut at 24 tokens: a limit, as any other (exit 4, max_tokens).
    assert code == 4, err
    *events, result = [parse_stream_line(line) for line in out.splitlines()]
    assert isinstance(result, TaskResult) and result.exit_reason == "max_tokens"
    blocks = [e for e in events if isinstance(e, p.BlockCommitted)]
    # 24 tokens; block boundaries sit at multiples of 8 in the whole sequence.
    assert sum(b.token_count for b in blocks) == 24 and all(b.steps for b in blocks)
    finished = next(e for e in events if isinstance(e, p.TurnFinished))
    assert finished.status == "completed" and finished.token_limit
    # The decoder chosen, and why, is said once at load; experts are counted per block.
    notices = [e.text for e in events if isinstance(e, p.Notice)]
    assert [n for n in notices if n.startswith("Decoding with")] == [
        "Decoding with clover-code's block-diffusion loop (the checkpoint's remote code has "
        "no diffusion_generate)."
    ]
    usage = [e for e in events if isinstance(e, p.UsageReport)]
    assert usage and usage[-1].experts_per_layer is not None
    assert 1 <= usage[-1].experts_per_layer <= 4
    # The terminal is the user's: no progress bars or library warnings on it.
    assert "Loading weights" not in err and "[transformers]" not in err, err


async def test_a_path_that_is_not_a_checkpoint_is_one_sentence(
    repo: Path,  # noqa: F811
    tmp_path: Path,
) -> None:
    code, out, err = await run_clover(
        repo,
        "--task",
        "hi",
        "--engine",
        "hf",
        "--model-path",
        str(tmp_path / "nowhere"),
        "--sandbox",
        "none",
        home=tmp_path,
    )
    assert code == 3 and out == ""
    assert err.strip().startswith("clover-code: ") and len(err.strip().splitlines()) == 1
    assert "is not a Hugging Face checkpoint" in err
