"""Bidirectional attention inside the block on the tiny Qwen3.5-MoE stand-in."""

from __future__ import annotations

from typing import Any

import pytest
import torch

from clover_code.engine.local.diffusion.forward import HFForward
from clover_code.engine.local.diffusion.state import CacheCheckpoint
from tests.tiny_model import build_tiny_checkpoint

PROMPT = list(range(3, 40))


@pytest.fixture(scope="module")
def model(tmp_path_factory: pytest.TempPathFactory) -> Any:
    from transformers import AutoModelForCausalLM

    path = build_tiny_checkpoint(tmp_path_factory.mktemp("tiny") / "ckpt")
    return AutoModelForCausalLM.from_pretrained(path).eval()


def _first_position(forward: HFForward, last: int) -> torch.Tensor:
    cache = forward.new_cache()
    forward.prefill(torch.tensor([PROMPT]), cache)
    return forward(torch.tensor([[10, 11, 12, 13, 14, 15, 16, last]]), cache)[0, 0]


def test_position_zero_sees_the_last_block_token(model: Any) -> None:
    bidirectional = HFForward(model)
    moved = (_first_position(bidirectional, 5) - _first_position(bidirectional, 77)).abs().max()
    assert moved > 1e-4
    causal = HFForward(model, block_attention=False)
    assert torch.equal(_first_position(causal, 5), _first_position(causal, 77))


def _block_causal(length: int, block_start: int) -> torch.Tensor:
    """The mask written out by hand: causal, plus the block's rows see the whole block."""
    rows = torch.arange(length)[:, None]
    cols = torch.arange(length)[None, :]
    allowed = (cols <= rows) | ((rows >= block_start) & (cols >= block_start))
    return allowed[None, None]


def test_chunked_prefill_and_block_equal_one_uncached_forward_with_the_mask(model: Any) -> None:
    forward = HFForward(model)
    cache = forward.new_cache()
    forward.prefill(torch.tensor([PROMPT[:16]]), cache)
    forward.prefill(torch.tensor([PROMPT[16:32]]), cache)
    block = [*PROMPT[32:], 7, 8, 9]  # the prompt's tail heads the block
    cached = forward(torch.tensor([block]), cache)[0]
    whole = torch.tensor([PROMPT[:32] + block])
    with torch.no_grad():
        reference = model(
            input_ids=whole, attention_mask=_block_causal(whole.shape[1], 32), use_cache=False
        ).logits[0, 32:]
    torch.testing.assert_close(cached, reference, atol=1e-5, rtol=1e-4)
    # And the mask matters: plain causal attention gives other logits.
    with torch.no_grad():
        causal = model(input_ids=whole, use_cache=False).logits[0, 32:]
    assert (causal[0] - reference[0]).abs().max() > 1e-4


def test_restore_after_a_bidirectional_step_is_exact(model: Any) -> None:
    forward = HFForward(model)
    cache = forward.new_cache()
    forward.prefill(torch.tensor([PROMPT[:32]]), cache)
    point = CacheCheckpoint.take(cache)
    block = torch.tensor([PROMPT[32:] + [265] * 3])
    first = forward(block, cache)
    point.restore()
    again = forward(block, cache)
    point.restore()
    assert torch.equal(first, again)
    assert forward.cache_length(cache) == 32
    committed = forward(torch.tensor([[*PROMPT[32:], 7, 8, 9]]), cache)
    fresh = forward.new_cache()
    forward.prefill(torch.tensor([PROMPT[:32]]), fresh)
    assert torch.equal(committed, forward(torch.tensor([[*PROMPT[32:], 7, 8, 9]]), fresh))
