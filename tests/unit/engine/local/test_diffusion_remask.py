"""Re-denoising a finished block's low-confidence positions before its commit."""

from __future__ import annotations

import itertools
from dataclasses import replace
from typing import Any

import pytest
import torch

from clover_code.engine.local.diffusion import Block, BlockDiffusion, Controls, DecodeOptions, Step
from clover_code.engine.local.diffusion.batch import BatchDecoder
from clover_code.engine.local.diffusion.forward import HFForward
from tests.tiny_model import ScriptedLogits, build_tiny_checkpoint, peaked

BS = 8
MASK = 265
PROMPT = list(range(3, 19))  # 16 tokens: two whole blocks
SURE = (0.99, 0.6, 0.3, 0.99, 0.2, 0.99, 0.45, 0.7)
"""The script's confidence at each position of a block."""


@pytest.fixture(scope="module")
def model(tmp_path_factory: pytest.TempPathFactory) -> Any:
    from transformers import AutoModelForCausalLM

    path = build_tiny_checkpoint(tmp_path_factory.mktemp("tiny") / "ckpt")
    return AutoModelForCausalLM.from_pretrained(
        path, dtype=torch.float64, experts_implementation="eager"
    ).eval()


def _options(**extra: Any) -> DecodeOptions:
    base = DecodeOptions(
        mask_id=MASK,
        block_size=BS,
        threshold=0.03,
        max_new_tokens=16,
        controls=Controls(repetition_penalty=1.3, presence_penalty=0.4),
    )
    return replace(base, **extra)


def _run(forward: Any, options: DecodeOptions, prompt: list[int] = PROMPT) -> Any:
    decoder = BlockDiffusion(forward, options)
    return list(decoder.generate(prompt)), decoder.stats


def _tokens(items: list[Step | Block]) -> list[int]:
    return [t for i in items if isinstance(i, Block) for t in i.ids]


def test_a_threshold_of_zero_decodes_exactly_as_off(model: Any) -> None:
    forward = HFForward(model)
    off, _ = _run(forward, _options())
    zero, stats = _run(forward, _options(remask_below=0.0, remask_rounds=3))
    assert zero == off
    assert stats.remask_rounds == stats.remasked_tokens == 0
    # The same model re-denoises once the threshold is above its confidences.
    on, stats = _run(forward, _options(remask_below=0.5))
    assert stats.remask_rounds > 0 and stats.remask_forwards > 0
    assert [i.steps for i in on if isinstance(i, Block)] != [
        i.steps for i in off if isinstance(i, Block)
    ]


def _scripted(model: Any) -> ScriptedLogits:
    """Token 40 + position % 50 at every position, as sure as ``SURE`` says."""
    vocab = model.config.vocab_size

    def script(ids: torch.Tensor, past: int) -> torch.Tensor:
        positions = range(past, past + ids.shape[1])
        return peaked(vocab, [(40 + p % 50, SURE[p % BS]) for p in positions])

    return ScriptedLogits(HFForward(model), script)


@pytest.mark.parametrize("rounds", [1, 2])
def test_only_the_positions_filled_below_it_are_masked_again(model: Any, rounds: int) -> None:
    below = 0.5
    forward = _scripted(model)
    items, stats = _run(forward, _options(threshold=0.9, remask_below=below, remask_rounds=rounds))
    low = [p for p in range(BS) if SURE[p] < below]
    assert low  # the script has positions on both sides of the threshold
    # Every forward's block as the model saw it (a block's ids run last): where a filled
    # position comes back masked, the block was re-denoised, and exactly the low
    # positions are masked (a new block starts all masked).
    blocks = [call[-BS:] for call in forward.calls[2:]]  # after the prompt's two blocks
    masked_again = [
        [p for p in range(BS) if after[p] == MASK]
        for before, after in itertools.pairwise(blocks)
        if set(after) != {MASK}
        and any(b != MASK and a == MASK for b, a in zip(before, after, strict=True))
    ]
    assert masked_again and all(positions == low for positions in masked_again)
    assert stats.remask_rounds == 2 * rounds  # two blocks, every round they were allowed
    assert stats.remasked_tokens == 2 * rounds * len(low)
    assert stats.remask_changed == 0  # the script says the same tokens again
    off, _ = _run(_scripted(model), _options(threshold=0.9))
    assert _tokens(items) == _tokens(off)
    extra = sum(i.steps or 0 for i in items if isinstance(i, Block)) - sum(
        i.steps or 0 for i in off if isinstance(i, Block)
    )
    assert extra == stats.remask_forwards == 2 * rounds * len(low)  # one per position


def _row_state(cache: Any, length: int) -> list[torch.Tensor]:
    out = []
    for layer in cache.layers:
        if hasattr(layer, "conv_states"):
            out += [layer.conv_states[0][:1], layer.recurrent_states[0][:1]]
        if hasattr(layer, "keys"):
            out += [layer.keys[:1, :, :length], layer.values[:1, :, :length]]
    return out


def test_the_committed_state_equals_a_fresh_forward_over_the_final_blocks(model: Any) -> None:
    forward = HFForward(model)
    items: list[Step | Block] = []
    decoder = BatchDecoder(forward, _options(max_new_tokens=24, remask_below=0.5), max_batch=1)
    sequence = decoder.add(PROMPT, sink=items.append)
    checked = 0
    while decoder.step():
        blocks = [i for i in items if isinstance(i, Block)]
        if sequence.index != len(blocks) or not blocks or sequence.state != "denoising":
            continue
        if checked == sequence.index:
            continue
        # The forward just run committed the latest block: the cache holds the prompt and
        # every block as finally re-denoised, as a fresh encoding of them would.
        assert decoder.cache is not None
        length = decoder.cache.lengths[0]
        fresh = forward.new_cache()
        tokens = PROMPT + _tokens(items)
        assert length == len(tokens)
        forward.prefill(torch.tensor([tokens]), fresh, block_size=BS)
        ours, theirs = _row_state(decoder.cache.cache, length), _row_state(fresh, length)
        assert len(ours) == len(theirs) > 4
        for a, b in zip(ours, theirs, strict=True):
            torch.testing.assert_close(a, b, atol=1e-9, rtol=0)
        checked = sequence.index
    assert checked == 2 and sequence.stats.remask_rounds >= 2


def test_a_batch_with_re_denoising_decodes_every_sequence_as_alone(model: Any) -> None:
    forward = HFForward(model)
    generator = torch.Generator().manual_seed(3)
    prompts = [torch.randint(3, 250, (n,), generator=generator).tolist() for n in (5, 16, 21)]
    jobs = [
        (p, _options(max_new_tokens=10 + 4 * k, remask_below=0.5, remask_rounds=1 + k % 2))
        for k, p in enumerate(prompts)
    ]
    alone = []
    for prompt, options in jobs:
        items, stats = _run(forward, options, prompt)
        assert stats.remask_rounds > 0
        alone.append(items)
    decoder = BatchDecoder(forward, jobs[0][1], max_batch=3)
    together: list[list[Step | Block]] = [[], [], []]
    for k, (prompt, options) in enumerate(jobs):
        decoder.add(prompt, options, sink=together[k].append)
    while decoder.step():
        pass
    assert together == alone
