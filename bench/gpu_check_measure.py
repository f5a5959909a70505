"""The measurements and checks of ``gpu_check.py``, each adding rows to its table."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import torch

from clover_code.engine.local.diffusion import BlockDiffusion, Controls, DecodeOptions
from clover_code.engine.local.diffusion.experts import ExpertRouting, find_routers
from clover_code.engine.local.diffusion.forward import HFForward
from clover_code.engine.local.diffusion.state import CacheCheckpoint

MASS = 0.9


def _timed(fn: Callable[[], Any], sync: Callable[[], None], repeat: int) -> float:
    fn()
    sync()
    start = time.perf_counter()
    for _ in range(repeat):
        fn()
    sync()
    return (time.perf_counter() - start) / repeat


def _random(config: Any, shape: tuple[int, int], seed: int) -> torch.Tensor:
    generator = torch.Generator().manual_seed(seed)
    return torch.randint(0, config.vocab_size - 2, shape, generator=generator)


def forwards(
    model: Any,
    config: Any,
    prefix: int,
    repeat: int,
    sync: Callable[[], None],
    table: Any,
    block: int = 32,
) -> dict[str, float]:
    """Time block forwards (all-mask, random, random with selection) and the 1-token anchor."""
    forward = HFForward(model)
    cache = forward.new_cache()
    forward.prefill(_random(config, (1, prefix), 0), cache)
    point = CacheCheckpoint.take(cache)
    blocks = {
        "all-mask": torch.full((1, block), int(config.mask_token_id)),
        "random": _random(config, (1, block), 1),
    }
    routing = ExpertRouting(find_routers(model))

    def run(ids: torch.Tensor) -> None:
        forward(ids, cache)
        point.restore()

    def experts(ids: torch.Tensor, mass: float | None) -> float:
        routing.mass = mass
        routing.begin_block()
        run(ids)
        touched = routing.end_block()
        return sum(touched) / max(len(touched), 1)

    def selected(ids: torch.Tensor) -> None:
        routing.mass = MASS
        routing.begin_block()
        run(ids)
        routing.end_block()

    figures: dict[str, float] = {}
    for label, ids in blocks.items():
        figures[label] = _timed(lambda ids=ids: run(ids), sync, repeat)
        table.add(
            f"block forward, {label}",
            f"{figures[label] * 1e3:.2f} ms",
            f"{experts(ids, None):.0f} experts/layer of {config.num_experts}; "
            f"after {prefix} cached tokens",
        )
    figures["selected"] = _timed(lambda: selected(blocks["random"]), sync, repeat)
    table.add(
        f"block forward, random, expert selection {MASS}",
        f"{figures['selected'] * 1e3:.2f} ms",
        f"{experts(blocks['random'], MASS):.0f} experts/layer",
    )
    routing.remove()
    one = blocks["random"][:, :1]
    figures["one"] = _timed(lambda: run(one), sync, repeat)
    table.add("one-token forward (autoregressive anchor)", f"{figures['one'] * 1e3:.2f} ms")
    return figures


def decode(
    model: Any,
    config: Any,
    prefix: int,
    blocks: int,
    sync: Callable[[], None],
    table: Any,
    block: int = 32,
) -> None:
    """Decode ``blocks`` blocks through the loop (steps and commits), selection off and on."""
    prompt = _random(config, (1, prefix), 2)[0].tolist()
    options = DecodeOptions(
        mask_id=int(config.mask_token_id),
        block_size=block,
        max_new_tokens=blocks * block,
        controls=Controls(),
        stop_ids=frozenset(),
    )
    for label, mass in (("off", None), (str(MASS), MASS)):
        routing = ExpertRouting(find_routers(model), mass)
        decoder = BlockDiffusion(HFForward(model), options, routing)
        sync()
        start = time.perf_counter()
        items = list(decoder.generate(prompt))
        sync()
        elapsed = time.perf_counter() - start
        routing.remove()
        stats = decoder.stats
        forwards = stats.step_forwards + stats.commit_forwards + stats.prefill_forwards
        committed = len(stats.experts)
        table.add(
            f"decode {committed} blocks, expert selection {label}",
            f"{elapsed * 1e3:.0f} ms",
            f"{stats.step_forwards} steps + {stats.commit_forwards} commits + "
            f"{stats.prefill_forwards} prefill ({elapsed / forwards * 1e3:.1f} ms/forward), "
            f"{stats.tokens} tokens, {stats.experts_per_layer or 0:.0f} experts/layer/block",
        )
        assert committed == blocks and len(items) > blocks, "the decode did not reach its blocks"


def _block_causal(length: int, start: int, config: Any, device: Any, dtype: Any) -> torch.Tensor:
    """The explicit mask: causal, and the block's rows see the whole block."""
    rows = torch.arange(length, device=device)[:, None]
    cols = torch.arange(length, device=device)[None, :]
    allowed = (cols <= rows) | ((rows >= start) & (cols >= start))
    if getattr(config, "_attn_implementation", "sdpa") == "eager":
        zero = torch.zeros((), dtype=dtype, device=device)
        return torch.where(allowed, zero, torch.finfo(dtype).min)[None, None]
    return allowed[None, None]


def correctness(model: Any, config: Any, table: Any, block_size: int = 32) -> dict[str, bool]:
    """Restore exact, cached vs uncached with the block mask, and the mask's effect:
    each check's name and whether it passed."""
    forward = HFForward(model)
    prompt = _random(config, (1, 96), 3)
    block = _random(config, (1, block_size), 4)
    block[0, block_size // 4 :] = int(config.mask_token_id)
    cache = forward.new_cache()
    forward.prefill(prompt[:, :64], cache)
    forward.prefill(prompt[:, 64:], cache)
    point = CacheCheckpoint.take(cache)
    first = forward(block, cache)
    point.restore()
    again = forward(block, cache)
    point.restore()
    exact = torch.equal(first, again)
    table.add("restore after a step", "exact" if exact else "NOT EXACT")
    whole = torch.cat([prompt, block], dim=1).to(forward.device)
    param = next(model.parameters())
    mask = _block_causal(whole.shape[1], 96, config, forward.device, param.dtype)
    reference = model(input_ids=whole, attention_mask=mask, use_cache=False).logits[:, 96:]
    diff = float((first.float() - reference.float()).abs().max())
    scale = float(reference.float().abs().max()) or 1.0
    tolerance = 2e-2 if param.dtype in (torch.bfloat16, torch.float16) else 1e-4
    verdict = "ok" if diff <= tolerance * scale else "MISMATCH"
    table.add(
        "cached block vs uncached with block mask",
        f"{diff:.2e}",
        f"{verdict} (max |logit| {scale:.2f}, tolerance {tolerance:g} of it)",
    )
    changed = block.clone()
    changed[0, -1] = (int(changed[0, -1]) + 1) % (config.vocab_size - 2)
    moved = forward(changed, cache)
    point.restore()
    effect = float((moved[0, 0].float() - first[0, 0].float()).abs().max())
    table.add(
        "block mask: position 0 vs last token",
        f"{effect:.2e}",
        "ok (bidirectional)" if effect > 0 else "NO EFFECT",
    )
    return {
        "restore after a step is exact": exact,
        "cached block matches uncached with the block mask": verdict == "ok",
        "the block mask moves position 0's logits": effect > 0,
    }
