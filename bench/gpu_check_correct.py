"""The correctness checks of ``gpu_check.py`` in the run's dtype, each adding rows to its table.

* restore after a step is exact;
* a cached block equals an uncached forward with the explicit block mask;
* the block mask moves position 0's logits (the block is bidirectional);
* a commit merged into the next block's first forward leaves the state a
  commit forward of its own leaves;
* a sequence in a batch of two gives what it gives alone.
"""

from __future__ import annotations

from typing import Any

import torch

from bench.gpu_check_measure import random_ids
from clover_code.engine.local.diffusion.forward import HFForward
from clover_code.engine.local.diffusion.layout import Layout, Segment, block_segments
from clover_code.engine.local.diffusion.rows import RaggedCache
from clover_code.engine.local.diffusion.state import CacheCheckpoint


def _tolerance(dtype: Any) -> float:
    return 2e-2 if dtype in (torch.bfloat16, torch.float16) else 1e-4


def _verdict(diff: float, scale: float, dtype: Any) -> str:
    tolerance = _tolerance(dtype)
    ok = diff <= tolerance * (scale or 1.0)
    return f"{'ok' if ok else 'MISMATCH'} (max |value| {scale:.2f}, tolerance {tolerance:g} of it)"


def _blockwise(length: int, block: int, device: Any) -> torch.Tensor:
    """The explicit mask: every position sees its aligned block and every block before it."""
    rows = torch.arange(length, device=device)[:, None] // block
    cols = torch.arange(length, device=device)[None, :] // block
    return (cols <= rows)[None, None]


def correctness(model: Any, config: Any, table: Any, block_size: int = 32) -> dict[str, bool]:
    """Every check, one row each; returns each check's name and whether it passed."""
    forward = HFForward(model)
    dtype = forward.dtype
    prompt = random_ids(config, (1, 3 * block_size), 3)
    block = random_ids(config, (1, block_size), 4)
    block[0, block_size // 4 :] = int(config.mask_token_id)
    cache = forward.new_cache()
    forward.prefill(prompt[:, : 2 * block_size], cache, block_size=block_size)
    forward.prefill(prompt[:, 2 * block_size :], cache, block_size=block_size)
    point = CacheCheckpoint.take(cache)
    first = forward.block(block, cache)
    point.restore()
    again = forward.block(block, cache)
    point.restore()
    exact = torch.equal(first, again)
    table.add("restore after a step", "exact" if exact else "NOT EXACT")

    whole = torch.cat([prompt, block], dim=1).to(forward.device)
    mask = _blockwise(whole.shape[1], block_size, forward.device)
    if getattr(config, "_attn_implementation", "sdpa") == "eager":
        zero = torch.zeros((), dtype=dtype, device=forward.device)
        mask = torch.where(mask, zero, torch.finfo(dtype).min)
    start = prompt.shape[1]
    reference = model(input_ids=whole, attention_mask=mask, use_cache=False).logits[:, start:]
    diff = float((first.float() - reference.float()).abs().max())
    scale = float(reference.float().abs().max())
    verdict = _verdict(diff, scale, dtype)
    table.add("cached block vs uncached with block mask", f"{diff:.2e}", verdict)

    changed = block.clone()
    changed[0, -1] = (int(changed[0, -1]) + 1) % (config.vocab_size - 2)
    moved = forward.block(changed, cache)
    point.restore()
    effect = float((moved[0, 0].float() - first[0, 0].float()).abs().max())
    table.add(
        "block mask: position 0 vs last token",
        f"{effect:.2e}",
        "ok (bidirectional)" if effect > 0 else "NO EFFECT",
    )
    return {
        "restore after a step is exact": exact,
        "cached block matches uncached with the block mask": verdict.startswith("ok"),
        "the block mask moves position 0's logits": effect > 0,
        "a merged commit leaves the state a commit forward leaves": _merged_commit(
            forward, prompt, block_size, table
        ),
        "a batched row gives what its sequence gives alone": _batched_row(
            forward, prompt, block, first, table, block_size
        ),
    }


def _states(cache: Any) -> list[torch.Tensor]:
    out: list[torch.Tensor] = []
    for layer in cache.layers:
        if hasattr(layer, "conv_states"):
            out += [layer.conv_states[0], layer.recurrent_states[0]]
        if hasattr(layer, "keys"):
            out += [layer.keys, layer.values]
    return out


def _merged_commit(forward: HFForward, prompt: torch.Tensor, bs: int, table: Any) -> bool:
    """The state after a merged commit against the state after a commit forward."""
    finished = prompt[:, :bs].flip(1)
    new = torch.full((1, bs), int(forward.model.config.mask_token_id))
    separate = forward.new_cache()
    forward.prefill(prompt, separate, block_size=bs)
    forward.block(finished, separate)
    merged = forward.new_cache()
    forward.prefill(prompt, merged, block_size=bs)
    point = CacheCheckpoint.take(merged)
    layout = Layout([prompt.shape[1]], [[Segment(bs), Segment(bs)]], split=bs)
    forward(torch.cat([finished, new], dim=1), merged, layout)
    point.commit(bs, torch.tensor([True]), forward.mid_states())
    pairs = list(zip(_states(merged), _states(separate), strict=True))
    diff = max(float((a.float() - b.float()).abs().max()) for a, b in pairs)
    scale = max(float(b.float().abs().max()) for _, b in pairs)
    split = "state split" if forward.splits else "NO SPLIT (commit forwards)"
    verdict = _verdict(diff, scale, forward.dtype)
    table.add(f"merged commit vs commit forward ({split})", f"{diff:.2e}", verdict)
    return verdict.startswith("ok")


def _batched_row(
    forward: HFForward,
    prompt: torch.Tensor,
    block: torch.Tensor,
    alone: torch.Tensor,
    table: Any,
    bs: int,
) -> bool:
    """One row of a two-row forward against the same sequence alone."""
    rows = RaggedCache(forward.new_cache())
    for ids in (prompt, prompt[:, :bs]):
        cache = forward.new_cache()
        forward(ids, cache, Layout([0], [block_segments(0, ids.shape[1], bs)]))
        rows.join(cache, ids.shape[1])
    layout = Layout([prompt.shape[1], bs], [[Segment(bs)], [Segment(bs)]])
    both = forward(torch.cat([block, block]), rows.cache, layout)
    diff = float((both[:1].float() - alone.float()).abs().max())
    scale = float(alone.float().abs().max())
    verdict = _verdict(diff, scale, forward.dtype)
    table.add("batched row vs the sequence alone", f"{diff:.2e}", verdict)
    return verdict.startswith("ok")
