"""A finished block committed by the next block's first forward, with the state split there."""

from __future__ import annotations

from typing import Any

import pytest
import torch

from clover_code.engine.local.diffusion import Block, BlockDiffusion, Controls, DecodeOptions
from clover_code.engine.local.diffusion.forward import HFForward
from clover_code.engine.local.diffusion.layout import Layout, Segment, single
from clover_code.engine.local.diffusion.state import CacheCheckpoint
from tests.tiny_model import build_tiny_checkpoint

BS = 8
PROMPT = list(range(3, 35))  # 32 tokens: four whole blocks


@pytest.fixture(scope="module")
def path(tmp_path_factory: pytest.TempPathFactory) -> Any:
    return build_tiny_checkpoint(
        tmp_path_factory.mktemp("tiny") / "ckpt", layers=("linear", "full", "linear", "linear")
    )


def _model(path: Any, dtype: Any = torch.float32) -> Any:
    from transformers import AutoModelForCausalLM

    extra = {"experts_implementation": "eager"} if dtype == torch.float64 else {}
    return AutoModelForCausalLM.from_pretrained(path, dtype=dtype, **extra).eval()


def _states(cache: Any) -> list[torch.Tensor]:
    out = []
    for layer in cache.layers:
        if hasattr(layer, "conv_states"):
            out += [layer.conv_states[0].clone(), layer.recurrent_states[0].clone()]
        if hasattr(layer, "keys"):
            out += [layer.keys.clone(), layer.values.clone()]
    return out


def test_a_merged_commit_leaves_the_state_a_commit_forward_leaves(path: Any) -> None:
    forward = HFForward(_model(path))
    assert forward.splits
    finished = [[40, 41, 42, 43, 44, 45, 46, 47]]
    new = torch.full((1, BS), 265)

    separate = forward.new_cache()
    forward.prefill(torch.tensor([PROMPT]), separate, block_size=BS)
    forward.block(torch.tensor(finished), separate)  # the commit forward
    expected = _states(separate)
    first_step = forward.block(new, separate)

    merged = forward.new_cache()
    forward.prefill(torch.tensor([PROMPT]), merged, block_size=BS)
    point = CacheCheckpoint.take(merged)
    layout = Layout([32], [[Segment(BS), Segment(BS)]], split=BS)
    logits = forward(torch.cat([torch.tensor(finished), new], dim=1), merged, layout)
    point.commit(BS, torch.tensor([True]), forward.mid_states())
    got = _states(merged)
    assert len(got) == len(expected) > 4
    for a, b in zip(got, expected, strict=True):
        torch.testing.assert_close(a, b, atol=1e-5, rtol=0)
    # The new block's logits are its first step's, as after a commit forward.
    torch.testing.assert_close(logits[:, BS:], first_step, atol=1e-5, rtol=0)


def test_without_the_split_the_state_would_hold_the_draft(path: Any) -> None:
    """What the split is for: one plain forward over both blocks keeps the wrong state."""
    forward = HFForward(_model(path))
    separate = forward.new_cache()
    forward.prefill(torch.tensor([PROMPT]), separate, block_size=BS)
    forward.block(torch.tensor([list(range(40, 48))]), separate)
    plain = forward.new_cache()
    forward.prefill(torch.tensor([PROMPT]), plain, block_size=BS)
    both = torch.tensor([list(range(40, 48)) + [265] * BS])
    forward(both, plain, single(32, [Segment(BS), Segment(BS)]))
    differs = [
        not torch.allclose(a, b, atol=1e-5)
        for a, b in zip(_states(plain)[:2], _states(separate)[:2], strict=True)
    ]
    assert any(differs)


def test_merged_and_separate_commits_decode_the_same_tokens(path: Any) -> None:
    forward = HFForward(_model(path, torch.float64))
    outs = {}
    for merge in (True, False):
        options = DecodeOptions(
            mask_id=265,
            block_size=BS,
            threshold=0.03,
            max_new_tokens=30,
            controls=Controls(repetition_penalty=1.3),
            merge_commit=merge,
        )
        decoder = BlockDiffusion(forward, options)
        items = list(decoder.generate(list(range(3, 40))))
        outs[merge] = ([t for i in items if isinstance(i, Block) for t in i.ids], decoder.stats)
    (tokens, merged), (reference, separate) = outs[True], outs[False]
    assert tokens == reference and len(tokens) == 30
    # Blocks of 3 (the prompt's tail block), 8, 8, 8 and 3: four commits.
    assert merged.commit_forwards == 0 and separate.commit_forwards == 4
    assert merged.forwards == separate.forwards - 4
