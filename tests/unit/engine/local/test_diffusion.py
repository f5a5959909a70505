"""The block-diffusion loop on the tiny Qwen3.5-MoE stand-in: rule, state, stops, limits."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
import torch

from clover_code.engine.local.diffusion import Block, BlockDiffusion, Controls, DecodeOptions, Step
from clover_code.engine.local.diffusion.forward import HFForward
from clover_code.engine.local.diffusion.rule import low_confidence_step
from clover_code.engine.local.diffusion.state import CacheCheckpoint
from clover_code.errors import ContextOverflow, EngineError
from tests.tiny_model import ScriptedLogits, build_tiny_checkpoint, peaked

NO_CONTROLS = Controls(repetition_penalty=1.0, end_bias_per_1k=0.0, think_bias_per_1k=0.0)


@pytest.fixture(scope="module")
def model(tmp_path_factory: pytest.TempPathFactory) -> Any:
    from transformers import AutoModelForCausalLM

    path = build_tiny_checkpoint(tmp_path_factory.mktemp("tiny") / "ckpt")
    return AutoModelForCausalLM.from_pretrained(path, trust_remote_code=True).eval()


def _independent_low_confidence(
    block: list[int], logits: Any, mask_id: int, threshold: float
) -> list[int]:
    """The rule written out position by position, with no vector tricks."""
    out = list(block)
    best_pos, best_p, any_fill = -1, -1.0, False
    for i, token in enumerate(block):
        if token != mask_id:
            continue
        probs = torch.softmax(logits[i].double(), dim=-1).tolist()
        p = max(probs)
        arg = probs.index(p)
        if p > threshold:
            out[i] = arg
            any_fill = True
        if p > best_p:
            best_pos, best_p = i, p
    if not any_fill and best_pos >= 0:
        probs = torch.softmax(logits[best_pos].double(), dim=-1).tolist()
        out[best_pos] = probs.index(max(probs))
    return out


@pytest.mark.parametrize("seed", range(6))
def test_rule_matches_an_independent_low_confidence(seed: int) -> None:
    gen = torch.Generator().manual_seed(seed)
    mask_id, n, vocab = 99, 16, 40
    block = torch.randint(0, 40, (n,), generator=gen)
    block[torch.rand(n, generator=gen) < 0.6] = mask_id
    block[0] = mask_id
    scale = [0.5, 3.0, 8.0][seed % 3]
    logits = torch.randn(n, vocab, generator=gen) * scale
    threshold = [0.95, 0.5, 0.2][seed % 3]
    got = low_confidence_step(block, logits, mask_id, threshold).ids.tolist()
    assert got == _independent_low_confidence(block.tolist(), logits, mask_id, threshold)


def test_rule_falls_back_to_the_single_most_confident_position() -> None:
    mask_id = 9
    logits = peaked(10, [(1, 0.5), (2, 0.7), (3, 0.6)])[0]
    fill = low_confidence_step(torch.tensor([mask_id] * 3), logits, mask_id, 0.95)
    assert fill.ids.tolist() == [mask_id, 2, mask_id]
    assert fill.filled.tolist() == [False, True, False]


def test_checkpoint_restore_equals_a_deepcopy_reference(model: Any) -> None:
    forward = HFForward(model)
    prompt = torch.arange(3, 67)[None]
    ours, reference = forward.new_cache(), forward.new_cache()
    forward.prefill(prompt, ours, block_size=8)
    forward.prefill(prompt, reference, block_size=8)
    mask = torch.full((1, 8), 265)
    point = CacheCheckpoint.take(ours)
    saved = copy.deepcopy(reference)
    for step in range(3):
        block = mask.clone()
        block[0, : step * 2] = 7
        logits_ours = forward.block(block, ours)
        point.restore()
        logits_ref = forward.block(block, copy.deepcopy(saved))
        assert torch.equal(logits_ours, logits_ref)
    final = torch.tensor([[5, 6, 7, 8, 9, 10, 11, 12]])
    forward.block(final, ours)
    forward.block(final, saved)
    after = torch.tensor([[13, 14]])
    assert torch.equal(forward.block(after, ours), forward.block(after, saved))
    assert ours.get_seq_length() == saved.get_seq_length() == 64 + 8 + 2


def _decoder(model: Any, script: Any, **options: Any) -> tuple[BlockDiffusion, ScriptedLogits]:
    scripted = ScriptedLogits(HFForward(model), script)
    defaults: dict[str, Any] = {"mask_id": 265, "block_size": 8, "controls": NO_CONTROLS}
    defaults.update(options)
    return BlockDiffusion(scripted, DecodeOptions(**defaults)), scripted


def _run(decoder: BlockDiffusion, prompt: list[int]) -> tuple[list[Step], list[Block]]:
    items = list(decoder.generate(prompt))
    return [i for i in items if isinstance(i, Step)], [i for i in items if isinstance(i, Block)]


def test_confident_model_fills_a_block_per_step(model: Any) -> None:
    def script(ids: Any, before: int) -> Any:
        return peaked(266, [(40 + (before + i) % 20, 0.99) for i in range(ids.shape[1])])

    decoder, scripted = _decoder(model, script, max_new_tokens=24)
    steps, blocks = _run(decoder, list(range(3, 19)))  # 16 tokens: block-aligned
    assert [b.steps for b in blocks] == [1, 1, 1]
    assert len(steps) == 3
    assert blocks[0].ids == [40 + (16 + i) % 20 for i in range(8)]
    assert blocks[-1].finish == "length"
    assert decoder.stats.tokens == 24
    assert decoder.stats.step_forwards == 3 and decoder.stats.commit_forwards == 0
    assert decoder.stats.tokens_per_forward == 8
    # The prompt, block 0, then each finished block rides on the next one's first forward.
    assert [len(c) for c in scripted.calls] == [16, 8, 16, 16]


def test_separate_commit_forwards_are_counted_in_the_blocks_steps(model: Any) -> None:
    def script(ids: Any, before: int) -> Any:
        return peaked(266, [(40 + (before + i) % 20, 0.99) for i in range(ids.shape[1])])

    decoder, scripted = _decoder(model, script, max_new_tokens=24, merge_commit=False)
    _, blocks = _run(decoder, list(range(3, 19)))
    assert [b.steps for b in blocks] == [2, 2, 1]  # the last block is never committed
    assert decoder.stats.step_forwards == 3 and decoder.stats.commit_forwards == 2
    assert decoder.stats.tokens_per_forward == 24 / 5
    assert [len(c) for c in scripted.calls] == [16, 8, 8, 8, 8, 8]


def test_unconfident_model_fills_one_position_per_step(model: Any) -> None:
    def script(ids: Any, before: int) -> Any:
        rows = [(50, 0.3 + 0.05 * i) for i in range(ids.shape[1])]
        return peaked(266, rows)

    decoder, _ = _decoder(model, script, max_new_tokens=8)
    steps, blocks = _run(decoder, list(range(3, 19)))
    assert blocks[0].steps == 8
    # The most confident masked position (the last) is filled first.
    assert steps[0].masked == [True] * 7 + [False]
    assert steps[1].masked == [True] * 6 + [False, False]


def test_prompt_tail_heads_the_first_block(model: Any) -> None:
    def script(ids: Any, before: int) -> Any:
        return peaked(266, [(60, 0.99)] * ids.shape[1])

    decoder, scripted = _decoder(model, script, max_new_tokens=10)
    _, blocks = _run(decoder, list(range(3, 14)))  # 11 tokens: 8 cached, 3 head block 0
    assert len(blocks[0].ids) == 5
    assert scripted.calls[1][:3] == [11, 12, 13]


def test_stop_token_ends_generation_inside_a_block(model: Any) -> None:
    stop = 262

    def script(ids: Any, before: int) -> Any:
        rows = [(70, 0.99)] * 3 + [(stop, 0.99)] + [(71, 0.3)] * (ids.shape[1] - 4)
        return peaked(266, rows)

    decoder, _ = _decoder(model, script, stop_ids=frozenset({stop}))
    steps, blocks = _run(decoder, list(range(3, 19)))
    assert len(blocks) == 1 and blocks[0].finish == "stop"
    assert blocks[0].ids == [70, 70, 70]
    assert len(steps) == 1  # positions after the stop were never denoised further
    assert decoder.stats.commit_forwards == 0


def test_confidences_are_reported_when_asked(model: Any) -> None:
    def script(ids: Any, before: int) -> Any:
        return peaked(266, [(80, 0.99)] * ids.shape[1])

    decoder, _ = _decoder(model, script, max_new_tokens=8, confidences=True)
    steps, _ = _run(decoder, list(range(3, 19)))
    assert steps[0].confidences is not None
    assert all(c == pytest.approx(0.99, abs=1e-4) for c in steps[0].confidences)


def test_end_bias_grows_with_length() -> None:
    controls = Controls(repetition_penalty=1.0, end_bias_after=100, end_bias_per_1k=2.0)
    logits = torch.zeros(1, 5)
    early = controls.apply(
        logits.clone(), penalty=None, generated=50, thinking=None, stop_id=4, think_end_id=None
    )
    late = controls.apply(
        logits.clone(), penalty=None, generated=1100, thinking=None, stop_id=4, think_end_id=None
    )
    assert early[0, 4] == 0 and late[0, 4] == pytest.approx(2.0)


def test_repetition_penalty_lowers_seen_tokens() -> None:
    controls = Controls(repetition_penalty=2.0, end_bias_per_1k=0, think_bias_per_1k=0)
    logits = torch.tensor([[4.0, -4.0, 4.0]])
    out = controls.apply(
        logits,
        penalty=controls.penalty(torch.tensor([1.0, 3.0, 0.0])),
        generated=0,
        thinking=0,
        stop_id=None,
        think_end_id=2,
    )
    assert out.tolist() == [[2.0, -8.0, 4.0]]


def test_presence_and_frequency_penalties_count_the_response() -> None:
    controls = Controls(
        repetition_penalty=1.0,
        presence_penalty=0.5,
        frequency_penalty=0.25,
        end_bias_per_1k=0,
        think_bias_per_1k=0,
    )
    out = controls.apply(
        torch.tensor([[4.0, -4.0, 4.0]]),
        penalty=controls.penalty(torch.tensor([1.0, 3.0, 0.0])),
        generated=4,
        thinking=None,
        stop_id=None,
        think_end_id=None,
    )
    assert out.tolist() == [[4.0 - 0.5 - 0.25, -4.0 - 0.5 - 0.75, 4.0]]
    assert Controls(repetition_penalty=1.0).penalty(torch.ones(3)) is None


def test_checkpoint_generation_config_sets_the_defaults_and_the_user_wins(
    tmp_path: Path,
) -> None:
    assert Controls.for_checkpoint(tmp_path, {}) == Controls()  # no generation_config.json
    card = {
        "repetition_penalty": 1.2,
        "presence_penalty": 0.3,
        "frequency_penalty": "high",  # not a number: ignored
        "eos_token_id": 2,
    }
    (tmp_path / "generation_config.json").write_text(json.dumps(card))
    controls = Controls.for_checkpoint(tmp_path, {"presence_penalty": 0.0})
    assert controls.repetition_penalty == 1.2
    assert controls.presence_penalty == 0.0
    assert controls.frequency_penalty == Controls().frequency_penalty
    card.update(
        end_bias_after=4096, think_bias_per_1k=2.5, end_bias_per_1k=-1, think_bias_after=1.5
    )
    (tmp_path / "generation_config.json").write_text(json.dumps(card))
    biased = Controls.for_checkpoint(tmp_path, {"end_bias_after": 100})
    assert (biased.end_bias_after, biased.think_bias_per_1k) == (100, 2.5)  # the user wins
    assert Controls.for_checkpoint(tmp_path, {}).end_bias_after == 4096
    # Out of range or not whole: ignored.
    assert biased.end_bias_per_1k == Controls().end_bias_per_1k
    assert biased.think_bias_after == Controls().think_bias_after
    (tmp_path / "generation_config.json").write_text('{"repetition_penalty": 0.5}')
    assert Controls.for_checkpoint(tmp_path, {}).repetition_penalty == 1.05  # below 1: ignored
    (tmp_path / "generation_config.json").write_text("{not json")
    assert Controls.for_checkpoint(tmp_path, {}) == Controls()


def test_prompt_over_the_context_window_is_one_clear_error(model: Any) -> None:
    decoder, _ = _decoder(model, lambda ids, before: peaked(266, [(1, 0.9)]), context_window=32)
    with pytest.raises(ContextOverflow, match="context window is 32"):
        list(decoder.generate(list(range(40))))


def test_empty_prompt_is_one_clear_error(model: Any) -> None:
    decoder, _ = _decoder(model, lambda ids, before: peaked(266, [(1, 0.9)]))
    with pytest.raises(EngineError, match="empty"):
        list(decoder.generate([]))


class _DeepcopyCheckpoint:
    """The reference: keep a deepcopy of the whole cache, put it back wholesale."""

    def __init__(self, cache: Any) -> None:
        self.cache = cache
        self.saved = [
            {k: copy.deepcopy(v) for k, v in vars(layer).items() if k != "owner"}
            for layer in cache.layers
        ]

    @classmethod
    def take(cls, cache: Any) -> _DeepcopyCheckpoint:
        return cls(cache)

    def retake(self, cache: Any) -> _DeepcopyCheckpoint:
        return _DeepcopyCheckpoint(cache)

    def restore(self) -> None:
        for layer, saved in zip(self.cache.layers, self.saved, strict=True):
            vars(layer).update(copy.deepcopy(saved))

    def commit(self, columns: int, rows: Any, mid: Any) -> None:
        # One row, committed by a forward of its own: keep all it wrote.
        assert mid is None and bool(rows.all())


def test_whole_generation_equals_the_deepcopy_reference(
    model: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    logits_seen: dict[str, list[Any]] = {"ours": [], "reference": []}

    def run(label: str) -> list[Any]:
        forward = HFForward(model)

        class Recorder:
            vocab_size = forward.vocab_size
            device = forward.device
            splits = forward.splits

            def new_cache(self) -> Any:
                return forward.new_cache()

            def cache_length(self, cache: Any) -> int:
                return forward.cache_length(cache)

            def mid_states(self) -> Any:
                return forward.mid_states()

            def __call__(self, ids: Any, cache: Any, layout: Any, keep: Any = None) -> Any:
                out = forward(ids, cache, layout, keep)
                logits_seen[label].append(out.clone())
                return out

        options = DecodeOptions(
            mask_id=265,
            block_size=8,
            threshold=0.02,
            max_new_tokens=16,
            controls=NO_CONTROLS,
            merge_commit=False,
        )
        return list(BlockDiffusion(Recorder(), options).generate(list(range(3, 40))))

    ours = run("ours")
    import clover_code.engine.local.diffusion.batch as batch_module

    monkeypatch.setattr(batch_module, "CacheCheckpoint", _DeepcopyCheckpoint)
    reference = run("reference")
    assert ours == reference
    assert len(logits_seen["ours"]) == len(logits_seen["reference"]) > 4
    for a, b in zip(logits_seen["ours"], logits_seen["reference"], strict=True):
        assert torch.equal(a, b)
    assert max(b.steps for b in ours if isinstance(b, Block)) > 1


def test_a_block_cannot_repeat_itself_while_it_denoises(model: Any) -> None:
    """The penalty counts the draft's filled positions at every step, not once per block."""

    def script(ids: Any, before: int) -> Any:
        logits = torch.zeros(1, ids.shape[1], 266)
        logits[0, :, 70] = 5.0
        logits[0, :, 71] = 4.5
        return logits

    controls = Controls(repetition_penalty=2.0, end_bias_per_1k=0.0, think_bias_per_1k=0.0)
    decoder, _ = _decoder(model, script, max_new_tokens=8, controls=controls)
    _, blocks = _run(decoder, list(range(3, 19)))
    assert set(blocks[0].ids) == {70, 71}  # once 70 is in the draft, 71 wins a position
    plain, _ = _decoder(model, script, max_new_tokens=8)
    _, same = _run(plain, list(range(3, 19)))
    assert set(same[0].ids) == {70}


def test_the_last_block_denoises_only_the_positions_it_needs(model: Any) -> None:
    def script(ids: Any, before: int) -> Any:
        return peaked(266, [(40 + (before + i) % 20, 0.3) for i in range(ids.shape[1])])

    decoder, scripted = _decoder(model, script, max_new_tokens=10)
    steps, blocks = _run(decoder, list(range(3, 19)))  # aligned: blocks of 8, then 2
    assert [len(b.ids) for b in blocks] == [8, 2] and blocks[-1].finish == "length"
    assert [b.steps for b in blocks] == [8, 2]  # one position per step, no more
    assert all(len(s.ids) == 2 for s in steps if s.block == 1)
    # The finished block rides on the first forward of the last one: 8 + 2 positions.
    assert [len(c) for c in scripted.calls[-2:]] == [8 + 2, 2]
