"""Several sequences in one forward: each decodes exactly as it does alone (float64)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
import torch

from clover_code.engine.local.diffusion import Block, Controls, DecodeOptions, Step
from clover_code.engine.local.diffusion.batch import BatchDecoder
from clover_code.engine.local.diffusion.forward import HFForward
from clover_code.engine.local.diffusion.layout import Layout, Segment
from clover_code.engine.local.diffusion.rows import RaggedCache
from clover_code.engine.local.diffusion.state import CacheCheckpoint
from tests.tiny_model import build_tiny_checkpoint

BS = 8
LENGTHS = (5, 8, 13, 21, 30, 37, 44, 3)
"""Prompt lengths: shorter than a block, aligned, and with every kind of tail."""


@pytest.fixture(scope="module")
def model(tmp_path_factory: pytest.TempPathFactory) -> Any:
    from transformers import AutoModelForCausalLM

    path = build_tiny_checkpoint(tmp_path_factory.mktemp("tiny") / "ckpt")
    return AutoModelForCausalLM.from_pretrained(
        path, dtype=torch.float64, experts_implementation="eager"
    ).eval()


def _options(budget: int, stops: frozenset[int] = frozenset()) -> DecodeOptions:
    return DecodeOptions(
        mask_id=265,
        block_size=BS,
        threshold=0.03,
        max_new_tokens=budget,
        stop_ids=stops,
        controls=Controls(repetition_penalty=1.3, presence_penalty=0.4),
    )


def _prompts() -> list[list[int]]:
    generator = torch.Generator().manual_seed(1)
    return [torch.randint(3, 250, (n,), generator=generator).tolist() for n in LENGTHS]


def _decode(
    forward: Any, jobs: list[tuple[list[int], DecodeOptions]], max_batch: int, stagger: int = 0
) -> tuple[list[list[Step | Block]], BatchDecoder]:
    """Decode ``jobs`` together; with ``stagger``, the second half is added after that many
    forwards (they join at a later round)."""
    decoder = BatchDecoder(forward, jobs[0][1], max_batch=max_batch)
    outs: list[list[Step | Block]] = [[] for _ in jobs]
    late = jobs[len(jobs) // 2 :] if stagger else []
    for k, (prompt, options) in enumerate(jobs[: len(jobs) - len(late)]):
        decoder.add(prompt, options, sink=outs[k].append)
    steps = 0
    while decoder.step() or late:
        steps += 1
        if late and steps == stagger:
            for j, (prompt, options) in enumerate(late):
                decoder.add(prompt, options, sink=outs[len(jobs) - len(late) + j].append)
            late = []
    return outs, decoder


def _tokens(items: list[Step | Block]) -> list[int]:
    return [t for i in items if isinstance(i, Block) for t in i.ids]


def _finishes(items: list[Step | Block]) -> list[str | None]:
    return [i.finish for i in items if isinstance(i, Block)]


def _jobs(forward: Any) -> list[tuple[list[int], DecodeOptions]]:
    """Eight sequences with mixed budgets; some stop on a token they say alone."""
    jobs = []
    for k, prompt in enumerate(_prompts()):
        options = _options(budget=14 + 5 * k)
        if k % 3 == 1:  # a stop token: the sixth token this sequence says alone
            alone, _ = _decode(forward, [(prompt, options)], 1)
            options = replace(options, stop_ids=frozenset({_tokens(alone[0])[5]}))
        jobs.append((prompt, options))
    return jobs


@pytest.mark.slow
def test_every_sequence_of_a_batch_decodes_as_it_does_alone(model: Any) -> None:
    forward = HFForward(model)
    jobs = _jobs(forward)
    runs = [_decode(forward, [job], 1) for job in jobs]
    alone = [outs[0] for outs, _ in runs]
    reasons = {f for items in alone for f in _finishes(items) if f}
    assert reasons == {"stop", "length"}
    for n in (2, 4, 8):
        together, decoder = _decode(forward, jobs[:n], n)
        for k in range(n):
            assert _tokens(together[k]) == _tokens(alone[k]), (n, k)
            assert _finishes(together[k]) == _finishes(alone[k])
            steps = [(i.block, i.step, i.ids) for i in together[k] if isinstance(i, Step)]
            assert steps == [(i.block, i.step, i.ids) for i in alone[k] if isinstance(i, Step)]
        assert decoder.forwards < sum(d.forwards for _, d in runs[:n])


def test_sequences_that_join_later_and_wait_for_a_place_decode_as_alone(model: Any) -> None:
    forward = HFForward(model)
    jobs = [(p, _options(budget=12 + 4 * k)) for k, p in enumerate(_prompts()[:4])]
    alone = [_tokens(_decode(forward, [job], 1)[0][0]) for job in jobs]
    # Two join after the first two have run a few steps; at most three at a time.
    together, _ = _decode(forward, jobs, max_batch=3, stagger=3)
    assert [_tokens(items) for items in together] == alone


def test_a_cancelled_sequence_leaves_and_the_others_go_on(model: Any) -> None:
    forward = HFForward(model)
    jobs = [(p, _options(budget=20)) for p in _prompts()[:3]]
    alone = [_tokens(_decode(forward, [job], 1)[0][0]) for job in jobs]
    decoder = BatchDecoder(forward, jobs[0][1], max_batch=3)
    outs: list[list[Step | Block]] = [[], [], []]
    gone = {"now": False}
    for k, (prompt, options) in enumerate(jobs):
        cancelled = (lambda: gone["now"]) if k == 1 else (lambda: False)
        decoder.add(prompt, options, sink=outs[k].append, cancelled=cancelled)
    for _ in range(3):
        decoder.step()
    gone["now"] = True
    while decoder.step():
        pass
    assert _tokens(outs[0]) == alone[0] and _tokens(outs[2]) == alone[2]
    assert len(_tokens(outs[1])) < len(alone[1])


def test_restore_is_exact_for_every_row_of_a_batched_cache(model: Any) -> None:
    forward = HFForward(model)
    rows = RaggedCache(forward.new_cache())
    lengths = []
    for prompt in _prompts()[2:5]:
        cache = forward.new_cache()
        aligned = len(prompt) // BS * BS
        forward.prefill(torch.tensor([prompt[:aligned]]), cache, block_size=BS)
        rows.join(cache, aligned)
        lengths.append(aligned)

    def states() -> list[torch.Tensor]:
        return [
            t.clone()
            for layer in rows.cache.layers
            if hasattr(layer, "conv_states")
            for t in (layer.conv_states[0], layer.recurrent_states[0])
        ]

    before = states()
    layout = Layout(lengths, [[Segment(BS)]] * 3)
    point = CacheCheckpoint.take(rows.cache)
    block = torch.full((3, BS), 265)
    first = forward(block, rows.cache, layout)
    point.restore()
    again = forward(block, rows.cache, layout)
    point.restore()
    assert torch.equal(first, again)
    assert rows.lengths == lengths
    for a, b in zip(before, states(), strict=True):
        assert torch.equal(a, b)
    # Each row is the sequence it holds: its step gives what the sequence alone gives.
    for k, prompt in enumerate(_prompts()[2:5]):
        alone = forward.new_cache()
        forward.prefill(torch.tensor([prompt[: lengths[k]]]), alone, block_size=BS)
        torch.testing.assert_close(first[k], forward.block(block[:1], alone)[0], atol=1e-10, rtol=0)
