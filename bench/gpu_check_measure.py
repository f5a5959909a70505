"""The timings of ``gpu_check.py``, each adding rows to its table."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import torch

from clover_code.engine.local.diffusion import Block, BlockDiffusion, Controls, DecodeOptions
from clover_code.engine.local.diffusion.batch import BatchDecoder
from clover_code.engine.local.diffusion.experts import ExpertRouting, Plan, find_routers
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


def random_ids(config: Any, shape: tuple[int, int], seed: int) -> torch.Tensor:
    """Random token ids [rows, n] (never the mask or the end token)."""
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
    forward.prefill(random_ids(config, (1, prefix), 0), cache, block_size=block)
    point = CacheCheckpoint.take(cache)
    blocks = {
        "all-mask": torch.full((1, block), int(config.mask_token_id)),
        "random": random_ids(config, (1, block), 1),
    }
    routing = ExpertRouting(find_routers(model), MASS)

    def run(ids: torch.Tensor) -> None:
        forward.block(ids, cache)
        point.restore()

    def experts(ids: torch.Tensor, plan: Plan) -> float:
        gid = routing.open_group()
        routing.prepare(torch.full((ids.shape[1],), gid, device=forward.device), {gid: plan})
        run(ids)
        touched = routing.end_group(gid)
        routing.prepare(None, {})
        return sum(touched) / max(len(touched), 1)

    figures: dict[str, float] = {}
    for label, ids in blocks.items():
        figures[label] = _timed(lambda ids=ids: run(ids), sync, repeat)
        table.add(
            f"block forward, {label}",
            f"{figures[label] * 1e3:.2f} ms",
            f"{experts(ids, 'free'):.0f} experts/layer of {config.num_experts}; "
            f"after {prefix} cached tokens",
        )
    figures["selected"] = _timed(lambda: experts(blocks["random"], "select"), sync, repeat)
    table.add(
        f"block forward, random, expert selection {MASS}",
        f"{figures['selected'] * 1e3:.2f} ms",
        f"{experts(blocks['random'], 'select'):.0f} experts/layer (chosen at this forward)",
    )
    routing.remove()
    one = blocks["random"][:, :1]
    figures["one"] = _timed(lambda: run(one), sync, repeat)
    table.add("one-token forward (autoregressive anchor)", f"{figures['one'] * 1e3:.2f} ms")
    return figures


def _options(config: Any, block: int, blocks: int, merge: bool = True) -> DecodeOptions:
    return DecodeOptions(
        mask_id=int(config.mask_token_id),
        block_size=block,
        max_new_tokens=blocks * block,
        controls=Controls(),
        stop_ids=frozenset(),
        merge_commit=merge,
    )


def decode(
    model: Any,
    config: Any,
    prefix: int,
    blocks: int,
    sync: Callable[[], None],
    table: Any,
    block: int = 32,
) -> None:
    """Decode ``blocks`` blocks through the loop: commits merged into the next block's
    first forward or as forwards of their own, and expert selection at 0.9."""
    prompt = random_ids(config, (1, prefix), 2)[0].tolist()
    runs = (("merged commits", None, True), ("commit forwards", None, False))
    for label, mass, merge in (*runs, (f"expert selection {MASS}", MASS, True)):
        routing = ExpertRouting(find_routers(model), mass)
        decoder = BlockDiffusion(HFForward(model), _options(config, block, blocks, merge), routing)
        sync()
        start = time.perf_counter()
        items = list(decoder.generate(prompt))
        sync()
        elapsed = time.perf_counter() - start
        routing.remove()
        stats = decoder.stats
        forwards = stats.forwards + stats.prefill_forwards
        committed = sum(isinstance(i, Block) for i in items)
        table.add(
            f"decode {committed} blocks, {label}",
            f"{elapsed * 1e3:.0f} ms",
            f"{stats.step_forwards} steps + {stats.commit_forwards} commits + "
            f"{stats.prefill_forwards} prefill ({elapsed / forwards * 1e3:.1f} ms/forward), "
            f"{stats.tokens} tokens, {stats.experts_per_layer or 0:.0f} experts/layer/block",
        )
        assert committed == blocks and len(items) > blocks, "the decode did not reach its blocks"


def remasking(
    model: Any, config: Any, prefix: int, sync: Callable[[], None], table: Any, block: int = 32
) -> dict[str, bool]:
    """Re-denoising against remasking off on two blocks of two prompts (``remask.py``):
    extra forwards per block, positions masked again, the share that changed."""
    from bench.remask import measure

    prompts = [random_ids(config, (1, prefix), seed)[0].tolist() for seed in (3, 4)]
    options = replace(_options(config, block, 2), threshold=0.02)
    sync()
    sound = measure(model, prompts, options, table.add, ((0.0, 1), (0.3, 1), (0.5, 2)))
    sync()
    return {"re-denoising ran, and 0 decodes as off": sound}


def batched(
    model: Any,
    config: Any,
    prefix: int,
    sizes: tuple[int, ...],
    sync: Callable[[], None],
    table: Any,
    block: int = 32,
    blocks: int = 2,
) -> None:
    """N sequences decoded together: aggregate tokens/s against one sequence alone."""
    forward = HFForward(model)
    options = _options(config, block, blocks)
    base: float | None = None
    for n in sizes:
        prompts = [random_ids(config, (1, prefix + 7 * k), 10 + k)[0].tolist() for k in range(n)]
        decoder = BatchDecoder(forward, options, max_batch=n)
        tokens = [0]

        def sink(item: Any, tokens: list[int] = tokens) -> None:
            if isinstance(item, Block):
                tokens[0] += len(item.ids)

        for prompt in prompts:
            decoder.add(prompt, sink=sink)
        sync()
        start = time.perf_counter()
        steps = 0
        while decoder.step():
            steps += 1
        sync()
        elapsed = time.perf_counter() - start
        rate = tokens[0] / elapsed
        base = base or rate
        table.add(
            f"batched decode, N = {n}",
            f"{rate_text(rate)} tok/s",
            f"{rate / base:.2f}x N = 1; {decoder.forwards} forwards "
            f"({elapsed / decoder.forwards * 1e3:.1f} ms each), {tokens[0]} tokens",
        )


def rate_text(tokens_per_s: float) -> str:
    """Whole tokens/s on a GPU; enough digits to read on a slow CPU run."""
    return f"{tokens_per_s:.0f}" if tokens_per_s >= 10 else f"{tokens_per_s:.2g}"
