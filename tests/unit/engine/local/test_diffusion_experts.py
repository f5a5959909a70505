"""Block-level expert selection on the loaded model's routers, and experts counted per block."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest
import torch

from clover_code.engine.base import ChatRequest
from clover_code.engine.events import BlockCommitted, Finished, Usage
from clover_code.engine.local.diffusion import Block, BlockDiffusion, Controls, DecodeOptions
from clover_code.engine.local.diffusion.experts import ExpertRouting, find_routers
from clover_code.engine.local.diffusion.forward import HFForward
from clover_code.engine.local.hf import HFBackend, HFOptions
from tests.tiny_model import ScriptedLogits, build_tiny_checkpoint, peaked

PROMPT = list(range(3, 70))


@pytest.fixture(scope="module")
def wide(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """256 experts, top-8, routers as peaked as a trained one's."""
    path = tmp_path_factory.mktemp("wide") / "ckpt"
    return build_tiny_checkpoint(path, experts=256, top_k=8, router_scale=100.0)


@pytest.fixture(scope="module")
def model(wide: Path) -> Any:
    from transformers import AutoModelForCausalLM

    return AutoModelForCausalLM.from_pretrained(wide).eval()


@pytest.fixture(scope="module")
def flat(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """256 experts, top-8, near-uniform routers."""
    from transformers import AutoModelForCausalLM

    path = tmp_path_factory.mktemp("flat") / "ckpt"
    build_tiny_checkpoint(path, experts=256, top_k=8, router_scale=0.01)
    return AutoModelForCausalLM.from_pretrained(path).eval()


def _options(model: Any, tokens: int = 16) -> DecodeOptions:
    return DecodeOptions(
        mask_id=int(model.config.mask_token_id),
        block_size=16,
        threshold=0.05,
        max_new_tokens=tokens,
        controls=Controls(),
        stop_ids=frozenset(),
    )


class _Recorder:
    """HFForward, keeping a copy of every forward's logits."""

    def __init__(self, forward: HFForward) -> None:
        self.forward = forward
        self.vocab_size, self.device, self.splits = (
            forward.vocab_size,
            forward.device,
            forward.splits,
        )
        self.seen: list[torch.Tensor] = []

    def new_cache(self) -> Any:
        return self.forward.new_cache()

    def cache_length(self, cache: Any) -> int:
        return self.forward.cache_length(cache)

    def mid_states(self) -> Any:
        return self.forward.mid_states()

    def __call__(self, ids: Any, cache: Any, layout: Any, keep: Any = None) -> torch.Tensor:
        out = self.forward(ids, cache, layout, keep)
        if keep is None:
            self.seen.append(out.clone())
        return out


def _decode(model: Any, mass: float | None, hooked: bool = True) -> tuple[BlockDiffusion, list]:
    recorder = _Recorder(HFForward(model))
    routing = ExpertRouting(find_routers(model), mass) if hooked else None
    try:
        decoder = BlockDiffusion(recorder, _options(model), routing)
        items = list(decoder.generate(PROMPT))
    finally:
        if routing is not None:
            routing.remove()
    assert sum(len(i.ids) for i in items if isinstance(i, Block)) == 16  # it terminates
    return decoder, recorder.seen


def test_the_routers_are_found_on_the_loaded_model(model: Any) -> None:
    routers = find_routers(model)
    assert len(routers) == 3 and all(r.num_experts == 256 and r.top_k == 8 for r in routers)


def test_mass_one_gives_the_logits_of_no_selection_bit_for_bit(model: Any) -> None:
    _, off = _decode(model, None, hooked=False)
    _, full = _decode(model, 1.0)
    assert len(off) == len(full) > 2  # steps, and a block's commit riding on the next
    for a, b in zip(off, full, strict=True):
        assert torch.equal(a, b)


def _watch_sets(model: Any, policy: str, tokens: int = 48) -> dict[tuple[int, int], list]:
    """Decode with selection at 0.9; per (block, router) the kept set at every forward of
    the block (its steps and its commit), checking every routed expert is in it."""
    routers = find_routers(model)
    routing = ExpertRouting(routers, 0.9, policy)  # type: ignore[arg-type]
    opened: list[int] = []
    original = routing.open_group

    def open_group() -> int:
        gid = original()
        opened.append(gid)
        return gid

    routing.open_group = open_group  # type: ignore[method-assign]
    sets: dict[tuple[int, int], list] = defaultdict(list)

    def check(index: int) -> Any:
        def hook(module: Any, args: Any, output: Any) -> None:
            for gid in routing.forward_groups():
                block = len(opened) - 1 - opened[::-1].index(gid)
                kept = routing.kept(gid)[index]
                sets[(block, index)].append(kept)
                tokens = routing._tokens
                assert tokens is not None
                used = output[2][tokens == gid]
                assert bool(kept[used.reshape(-1)].all()), "an expert outside the kept set"

        return hook

    # Checks run after the selection hooks (hooks run in registration order).
    handles = [r.register_forward_hook(check(i)) for i, r in enumerate(routers)]
    try:
        options = _options(model, tokens=tokens)
        list(BlockDiffusion(HFForward(model), options, routing).generate(PROMPT))
    finally:
        for handle in handles:
            handle.remove()
        routing.remove()
    return sets


def test_the_kept_set_is_the_same_in_every_forward_of_a_block(model: Any) -> None:
    sets = _watch_sets(model, "block")
    assert {block for block, _ in sets} == {0, 1, 2, 3}  # the first is the prompt's tail block
    forwards = [len(v) for v in sets.values()]
    assert max(forwards) > 2  # several steps, plus the commit
    for (block, _router), kept in sets.items():
        assert all(torch.equal(kept[0], k) for k in kept), f"block {block} changed its set"
        assert 8 <= int(kept[0].sum()) < 256


def test_the_step_policy_rechooses_and_so_changes_the_set(flat: Any) -> None:
    sets = _watch_sets(flat, "step", tokens=16)
    changed = [any(not torch.equal(k[0], x) for x in k) for k in sets.values()]
    assert any(changed)


@pytest.mark.slow
def test_selection_never_touches_more_experts_than_routing_would_without_it(
    model: Any, flat: Any
) -> None:
    for m, policies in ((model, ("block", "half")), (flat, ("block", "filled"))):
        for policy in policies:
            routing = ExpertRouting(find_routers(m), 0.9, policy)  # type: ignore[arg-type]
            seen_would: list[tuple[list[int], list[int]]] = []
            original = routing.end_group

            def end_group(
                gid: int, routing: Any = routing, original: Any = original, out: Any = seen_would
            ) -> Any:
                would = routing.would(gid)
                seen = original(gid)
                out.append((seen, would))
                return seen

            routing.end_group = end_group  # type: ignore[method-assign]
            try:
                list(BlockDiffusion(HFForward(m), _options(m, 16), routing).generate(PROMPT))
            finally:
                routing.remove()
            assert seen_would
            for seen, would in seen_would:
                assert all(s <= w for s, w in zip(seen, would, strict=True)), (policy, seen, would)


def test_selection_touches_fewer_experts_than_off_on_the_same_blocks(flat: Any) -> None:
    """Scripted fills: both runs decode the same tokens, so the blocks are the same."""

    def script(ids: Any, before: int) -> Any:
        rows = [
            (40 + (before + i) % 50, 0.5 + 0.01 * ((before + i) % 40)) for i in range(ids.shape[1])
        ]
        return peaked(int(flat.config.vocab_size), rows)

    counts = {}
    for mass in (None, 0.9):
        routing = ExpertRouting(find_routers(flat), mass)
        decoder = BlockDiffusion(
            ScriptedLogits(HFForward(flat), script), _options(flat, 32), routing
        )
        try:
            items = list(decoder.generate(PROMPT))
        finally:
            routing.remove()
        counts[mass] = (decoder.stats.experts, [b.ids for b in items if isinstance(b, Block)])
    (off, blocks_off), (on, blocks_on) = counts[None], counts[0.9]
    assert blocks_off == blocks_on and len(on) == len(off) == 3
    for block_on, block_off in zip(on, off, strict=True):
        assert all(a <= b for a, b in zip(block_on, block_off, strict=True)), (on, off)
    assert sum(map(sum, on)) < sum(map(sum, off))


async def test_the_backend_reports_experts_in_usage(wide: Path) -> None:
    backend = HFBackend(str(wide), HFOptions(block_size=8, max_tokens=16, expert_mass=0.9))
    events = [e async for e in backend.stream(ChatRequest([{"role": "user", "content": "hi"}]))]
    usage = [e for e in events if isinstance(e, Usage)]
    assert usage and usage[0].experts_per_layer is not None
    assert 1 <= usage[0].experts_per_layer <= 256
    assert [e for e in events if isinstance(e, BlockCommitted)]
    assert isinstance(events[-1], Finished) and events[-1].reason != "error"
    await backend.aclose()
