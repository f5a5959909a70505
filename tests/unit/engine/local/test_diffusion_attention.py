"""Attention on the tiny Qwen3.5-MoE stand-in: bidirectional blocks, block or causal prefill."""

from __future__ import annotations

from typing import Any

import pytest
import torch

from clover_code.engine.local.diffusion.forward import HFForward
from clover_code.engine.local.diffusion.state import CacheCheckpoint
from tests.tiny_model import build_tiny_checkpoint

PROMPT = list(range(3, 40))
BS = 8


@pytest.fixture(scope="module")
def model(tmp_path_factory: pytest.TempPathFactory) -> Any:
    from transformers import AutoModelForCausalLM

    path = build_tiny_checkpoint(tmp_path_factory.mktemp("tiny") / "ckpt")
    return AutoModelForCausalLM.from_pretrained(path).eval()


def _first_position(forward: HFForward, last: int) -> torch.Tensor:
    cache = forward.new_cache()
    forward.prefill(torch.tensor([PROMPT]), cache, block_size=BS)
    return forward.block(torch.tensor([[10, 11, 12, 13, 14, 15, 16, last]]), cache)[0, 0]


def test_position_zero_sees_the_last_block_token(model: Any) -> None:
    bidirectional = HFForward(model)
    moved = (_first_position(bidirectional, 5) - _first_position(bidirectional, 77)).abs().max()
    assert moved > 1e-4
    causal = HFForward(model, block_attention=False)
    assert torch.equal(_first_position(causal, 5), _first_position(causal, 77))


def _reference(model: Any, ids: list[int], allowed: torch.Tensor) -> torch.Tensor:
    """One uncached forward of ``ids`` with the mask written out by hand."""
    whole = torch.tensor([ids])
    with torch.no_grad():
        out = model(input_ids=whole, attention_mask=allowed[None, None], use_cache=False)
    logits: torch.Tensor = out.logits[0]
    return logits


def _blockwise(length: int) -> torch.Tensor:
    """Every position sees its whole aligned block and every block before it."""
    rows = torch.arange(length)[:, None] // BS
    cols = torch.arange(length)[None, :] // BS
    return cols <= rows


def _causal_then_block(length: int, block_start: int) -> torch.Tensor:
    """Causal over the prompt; the block's rows see the whole block."""
    rows = torch.arange(length)[:, None]
    cols = torch.arange(length)[None, :]
    return (cols <= rows) | ((rows >= block_start) & (cols >= block_start))


@pytest.mark.parametrize("causal", [False, True])
def test_chunked_prefill_and_block_equal_one_uncached_forward_with_the_mask(
    model: Any, causal: bool
) -> None:
    forward = HFForward(model)
    cache = forward.new_cache()
    # Two chunks, the second not starting on a chunk boundary of the first's size.
    forward.prefill(torch.tensor([PROMPT[:16]]), cache, block_size=BS, causal=causal)
    forward.prefill(torch.tensor([PROMPT[16:32]]), cache, block_size=BS, causal=causal)
    block = [*PROMPT[32:], 7, 8, 9]  # the prompt's tail heads the block
    cached = forward.block(torch.tensor([block]), cache)[0]
    ids = PROMPT[:32] + block
    allowed = _causal_then_block(len(ids), 32) if causal else _blockwise(len(ids))
    reference = _reference(model, ids, allowed)
    torch.testing.assert_close(cached, reference[32:], atol=1e-5, rtol=1e-4)
    # And the mask matters: plain causal attention gives other logits.
    with torch.no_grad():
        plain = model(input_ids=torch.tensor([ids]), use_cache=False).logits[0, 32:]
    assert (plain[0] - reference[32]).abs().max() > 1e-4


def test_block_prefill_and_causal_prefill_give_other_first_block_logits(model: Any) -> None:
    forward = HFForward(model)
    firsts = []
    for causal in (False, True):
        cache = forward.new_cache()
        forward.prefill(torch.tensor([PROMPT[:32]]), cache, block_size=BS, causal=causal)
        firsts.append(forward.block(torch.tensor([[*PROMPT[32:], 265, 265, 265]]), cache)[0])
    assert (firsts[0] - firsts[1]).abs().max() > 1e-6


def test_restore_after_a_bidirectional_step_is_exact(model: Any) -> None:
    forward = HFForward(model)
    cache = forward.new_cache()
    forward.prefill(torch.tensor([PROMPT[:32]]), cache, block_size=BS)
    point = CacheCheckpoint.take(cache)
    block = torch.tensor([PROMPT[32:] + [265] * 3])
    first = forward.block(block, cache)
    point.restore()
    again = forward.block(block, cache)
    point.restore()
    assert torch.equal(first, again)
    assert forward.cache_length(cache) == 32
    committed = forward.block(torch.tensor([[*PROMPT[32:], 7, 8, 9]]), cache)
    fresh = forward.new_cache()
    forward.prefill(torch.tensor([PROMPT[:32]]), fresh, block_size=BS)
    assert torch.equal(committed, forward.block(torch.tensor([[*PROMPT[32:], 7, 8, 9]]), fresh))


@pytest.mark.parametrize("mode", ["block", "causal"])
def test_the_prefill_setting_reaches_the_prompts_forwards(model: Any, mode: str) -> None:
    from clover_code.engine.local.diffusion import BlockDiffusion, DecodeOptions

    forward = HFForward(model)
    seen: list[list[tuple[int, str]]] = []

    class Recorder:
        vocab_size, device, splits = forward.vocab_size, forward.device, forward.splits

        def new_cache(self) -> Any:
            return forward.new_cache()

        def cache_length(self, cache: Any) -> int:
            return forward.cache_length(cache)

        def mid_states(self) -> Any:
            return forward.mid_states()

        def __call__(self, ids: Any, cache: Any, layout: Any, keep: Any = None) -> Any:
            if keep is not None:  # a prompt forward
                seen.append([(s.length, s.kind) for s in layout.segments[0]])
            return forward(ids, cache, layout, keep)

    options = DecodeOptions(mask_id=265, block_size=BS, max_new_tokens=4, prefill=mode)  # type: ignore[arg-type]
    list(BlockDiffusion(Recorder(), options).generate(PROMPT))
    expected = [(BS, "block")] * 4 if mode == "block" else [(32, "causal")]
    assert seen == [expected]
