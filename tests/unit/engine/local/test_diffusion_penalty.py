"""Penalties on the seen columns and the fill rule on lists: the vocabulary-wide forms'
results, bit for bit."""

from __future__ import annotations

import pytest
import torch

from clover_code.engine.local.diffusion import Controls
from clover_code.engine.local.diffusion.rule import low_confidence_step

_NO_BIAS = {"generated": 0, "thinking": None, "stop_id": None, "think_end_id": None}


def _dense(controls: Controls, logits: torch.Tensor, counts: torch.Tensor) -> torch.Tensor:
    """Every logit adjusted by a factor and a shift over the whole vocabulary (1 and 0
    for the tokens not seen)."""
    seen = counts > 0
    one = torch.ones((), dtype=torch.float32)
    positive = torch.where(seen, one / controls.repetition_penalty, one)
    negative = torch.where(seen, one * controls.repetition_penalty, one)
    out = logits * torch.where(logits > 0, positive, negative)
    shift = -(controls.presence_penalty * seen.float() + controls.frequency_penalty * counts)
    return out + shift


@pytest.mark.parametrize("seed", range(8))
def test_penalty_on_the_seen_columns_equals_the_vocabulary_wide_form(seed: int) -> None:
    generator = torch.Generator().manual_seed(seed)
    vocab = 300
    controls = Controls(
        repetition_penalty=[1.05, 1.1, 1.3, 0.9][seed % 4],  # 1.05, 1.1: 1/p rounds in float32
        presence_penalty=[0.0, 0.5][seed % 2],
        frequency_penalty=[0.0, 0.25, 0.7][seed % 3],
    )
    logits = torch.randn(32, vocab, generator=generator) * 4
    logits[0, :3] = torch.tensor([0.0, -0.0, float("inf")])
    counts = (torch.rand(vocab, generator=generator) < 0.1).float()
    counts *= torch.randint(1, 4, (vocab,), generator=generator)
    order = torch.randperm(vocab, generator=generator).tolist()
    mapping = {token: int(counts[token]) for token in order if counts[token] > 0}

    expected = _dense(controls, logits, counts)
    by_tensor = controls.apply(logits.clone(), penalty=controls.penalty(counts), **_NO_BIAS)
    by_mapping = controls.apply(logits.clone(), penalty=controls.penalty(mapping), **_NO_BIAS)
    for got in (by_tensor, by_mapping):
        assert torch.equal(got, expected)
        assert torch.equal(got.signbit(), expected.signbit())


def test_no_seen_token_is_no_penalty() -> None:
    assert Controls().penalty({}) is None
    assert Controls().penalty(torch.zeros(5)) is None


def test_rule_fallback_takes_the_first_of_equal_confidences() -> None:
    mask_id = 9
    logits = torch.zeros(4, 10)
    logits[1, 3] = logits[2, 4] = 2.0  # positions 1 and 2 equally confident
    block = torch.tensor([5, mask_id, mask_id, mask_id])
    fill = low_confidence_step(block, logits, mask_id, 0.95)
    assert fill.ids.tolist() == [5, 3, mask_id, mask_id]
    assert fill.positions == [1]
    assert fill.tokens == fill.ids.tolist()
    assert fill.filled.tolist() == [False, True, False, False]


def test_rule_fallback_takes_a_nan_position_as_torch_argmax_does() -> None:
    mask_id = 9
    logits = torch.zeros(3, 10)
    logits[0, 2] = 5.0
    logits[2] = float("nan")
    block = torch.tensor([mask_id, 4, mask_id])
    fill = low_confidence_step(block, logits, mask_id, 0.999)
    masked = block == mask_id
    candidate = torch.softmax(logits, -1).max(-1).values.masked_fill(~masked, -float("inf"))
    assert fill.positions == [int(candidate.argmax())] == [2]


def test_rule_compares_with_the_threshold_in_float32() -> None:
    # A float32 tensor compares with a Python float in float32: 1 - 1e-9 rounds to 1.0,
    # which a confidence of exactly 1.0 does not exceed (compared as doubles, it would).
    mask_id = 1
    logits = torch.zeros(2, 1)  # one token: confidence 1.0 at both positions
    fill = low_confidence_step(torch.tensor([mask_id, mask_id]), logits, mask_id, 1 - 1e-9)
    assert fill.scores == [1.0, 1.0]
    assert fill.positions == [0]  # none clears it: the fallback fills one position
