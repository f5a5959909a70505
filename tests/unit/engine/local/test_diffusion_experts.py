"""Block-level expert selection on the loaded model's routers, and experts counted per block."""

from __future__ import annotations

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
from tests.tiny_model import build_tiny_checkpoint

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


def _decode(model: Any, mass: float | None, hooked: bool = True) -> tuple[BlockDiffusion, list]:
    seen: list[torch.Tensor] = []
    forward = HFForward(model)

    class Recorder:
        vocab_size = forward.vocab_size

        def new_cache(self) -> Any:
            return forward.new_cache()

        def cache_length(self, cache: Any) -> int:
            return forward.cache_length(cache)

        def prefill(self, ids: torch.Tensor, cache: Any) -> torch.Tensor:
            return forward.prefill(ids, cache)

        def __call__(self, ids: torch.Tensor, cache: Any) -> torch.Tensor:
            out = forward(ids, cache)
            seen.append(out.clone())
            return out

    options = DecodeOptions(
        mask_id=int(model.config.mask_token_id),
        block_size=16,
        threshold=0.05,
        max_new_tokens=16,
        controls=Controls(),
        stop_ids=frozenset(),
    )
    routing = ExpertRouting(find_routers(model), mass) if hooked else None
    try:
        decoder = BlockDiffusion(Recorder(), options, routing)
        items = list(decoder.generate(PROMPT))
    finally:
        if routing is not None:
            routing.remove()
    assert sum(len(i.ids) for i in items if isinstance(i, Block)) == 16  # it terminates
    return decoder, seen


def test_the_routers_are_found_on_the_loaded_model(model: Any) -> None:
    routers = find_routers(model)
    assert len(routers) == 3 and all(r.num_experts == 256 and r.top_k == 8 for r in routers)


def test_mass_one_gives_the_logits_of_no_selection(model: Any) -> None:
    _, off = _decode(model, None, hooked=False)
    _, full = _decode(model, 1.0)
    assert len(off) == len(full) > 2  # steps and a commit
    for a, b in zip(off, full, strict=True):
        assert torch.equal(a, b)


def test_every_routed_expert_is_in_the_kept_set(model: Any) -> None:
    routers = find_routers(model)
    routing_box: dict[str, ExpertRouting] = {}
    checks: list[tuple[bool, int]] = []
    original = ExpertRouting.__init__

    def spy(self: ExpertRouting, found: list[Any], mass: float | None = None) -> None:
        original(self, found, mass)
        routing_box["it"] = self

    def check(index: int) -> Any:
        def hook(module: Any, args: Any, output: Any) -> None:
            routing = routing_box.get("it")
            if routing is None or routing.mode == "idle":
                return
            kept = routing.kept[index]
            assert kept is not None
            checks.append((routing.in_kept_sets(output[2], index), int(kept.sum())))

        return hook

    ExpertRouting.__init__ = spy  # type: ignore[method-assign]
    try:
        routing = ExpertRouting(routers, 0.9)
        # Checks run after the selection hooks (hooks run in registration order).
        handles = [r.register_forward_hook(check(i)) for i, r in enumerate(routers)]
        forward = HFForward(model)
        options = DecodeOptions(
            mask_id=int(model.config.mask_token_id),
            block_size=16,
            threshold=0.05,
            max_new_tokens=32,
        )
        list(BlockDiffusion(forward, options, routing).generate(PROMPT))
    finally:
        ExpertRouting.__init__ = original  # type: ignore[method-assign]
        for handle in handles:
            handle.remove()
        routing.remove()
    assert checks and all(inside for inside, _ in checks)
    assert all(8 <= kept < 256 for _, kept in checks)


def test_selection_touches_fewer_experts(model: Any) -> None:
    off, _ = _decode(model, None)
    on, _ = _decode(model, 0.9)
    assert len(off.stats.experts) == len(on.stats.experts) == 2  # 13 + 3 positions
    assert all(len(block) == 3 for block in off.stats.experts)
    assert on.stats.experts_per_layer is not None and off.stats.experts_per_layer is not None
    assert on.stats.experts_per_layer < off.stats.experts_per_layer


async def test_the_backend_reports_experts_in_usage(wide: Path) -> None:
    backend = HFBackend(str(wide), HFOptions(block_size=8, max_tokens=16, expert_mass=0.9))
    events = [e async for e in backend.stream(ChatRequest([{"role": "user", "content": "hi"}]))]
    usage = [e for e in events if isinstance(e, Usage)]
    assert usage and usage[0].experts_per_layer is not None
    assert 1 <= usage[0].experts_per_layer <= 256
    assert [e for e in events if isinstance(e, BlockCommitted)]
    assert isinstance(events[-1], Finished) and events[-1].reason != "error"
