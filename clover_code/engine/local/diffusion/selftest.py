"""Whether the builtin loop may drive a model's forward: a signature check and a self-test.

The loop drives a forward with a cache, explicit positions and a 4D block
mask, and undoes a step by restoring the cache. For a stock transformers
class that is known to work. A forward from a checkpoint's remote code may
take those arguments and mean something else by them (its own layers, its
own cache), so before the loop drives one, ``forward_problem`` checks its
signature and runs one block on a few tokens:

* a cached block forward equals one uncached forward of the whole sequence
  with the explicit mask (the cache and the mask mean what the loop thinks);
* a step restored and run again gives the same logits (restore is exact);
* the block's first position sees its last one (the block is bidirectional);
* two sequences in one forward each give what they give alone (batching).

Any failure is one sentence naming what did not hold; the backend then uses
the checkpoint's own generate or refuses, and never guesses.
"""

from __future__ import annotations

import inspect
from typing import Any

import torch

from clover_code.engine.local.diffusion.forward import HFForward
from clover_code.engine.local.diffusion.layout import Layout, Segment, block_segments, single
from clover_code.engine.local.diffusion.state import CacheCheckpoint

__all__ = ["forward_problem", "is_stock"]

_NEEDS = ("input_ids", "attention_mask", "position_ids", "use_cache")
_BLOCK = 4


def is_stock(model: Any) -> bool:
    """Whether the model is a class transformers itself ships."""
    return type(model).__module__.startswith("transformers.")


def forward_problem(model: Any, mask_id: int) -> str | None:
    """None when the loop may drive ``model``'s forward, else what does not hold."""
    try:
        params = inspect.signature(model.forward).parameters
    except (TypeError, ValueError):
        return "its forward has no signature to check"
    named = set(params)
    missing = [n for n in _NEEDS if n not in named]
    if not {"cache", "past_key_values"} & named:
        missing.append("past_key_values")
    if missing:
        return f"its forward takes no {', '.join(missing)}"
    try:
        with torch.no_grad():
            return _self_test(model, mask_id)
    except Exception as exc:
        detail = " ".join(str(exc).split())[:200] or type(exc).__name__
        return f"its forward failed the one-block self-test ({type(exc).__name__}: {detail})"


def _self_test(model: Any, mask_id: int) -> str | None:
    forward = HFForward(model)
    vocab = min(forward.vocab_size, 200)
    generator = torch.Generator().manual_seed(0)
    prompt = torch.randint(3, vocab, (1, 2 * _BLOCK), generator=generator)
    block = torch.randint(3, vocab, (1, _BLOCK), generator=generator)
    block[0, 1:-1] = mask_id
    scale = 1e-4 if forward.dtype == torch.float32 or forward.dtype == torch.float64 else 2e-2

    def prefilled() -> Any:
        cache = forward.new_cache()
        forward(prompt, cache, Layout([0], [block_segments(0, prompt.shape[1], _BLOCK)]))
        return cache

    cache = prefilled()
    start = prompt.shape[1]
    point = CacheCheckpoint.take(cache)
    cached = forward(block, cache, single(start, [Segment(_BLOCK)]))
    point.restore()
    whole = torch.cat([prompt, block], dim=1)
    segments = [*block_segments(0, start, _BLOCK), Segment(_BLOCK)]
    layout = Layout([0], [segments])
    mask = layout.attention_mask(model.config, whole.shape[1], forward.dtype, forward.device)
    reference = model(
        input_ids=whole.to(forward.device),
        attention_mask=mask,
        position_ids=layout.positions(whole.shape[1], forward.device),
        use_cache=False,
    ).logits[:, start:]
    if not _close(cached, reference, scale):
        return "a cached block forward does not equal an uncached one with the block mask"
    again = forward(block, cache, single(start, [Segment(_BLOCK)]))
    point.restore()
    if not torch.equal(cached, again):
        return "a step restored from a cache checkpoint does not give the same logits again"
    moved = block.clone()
    moved[0, -1] = 3 + (int(moved[0, -1]) - 2) % (vocab - 3)
    other = forward(moved, cache, single(start, [Segment(_BLOCK)]))
    point.restore()
    if not bool((other[0, 0] - cached[0, 0]).abs().max() > 0):
        return "the block's first position does not see its last one (no bidirectional block)"
    return _batch_problem(forward, prompt, block, cached, scale)


def _batch_problem(
    forward: HFForward, prompt: torch.Tensor, block: torch.Tensor, alone: torch.Tensor, scale: float
) -> str | None:
    """Two rows of different lengths in one forward each give what they give alone."""
    from clover_code.engine.local.diffusion.rows import RaggedCache

    short = prompt[:, :_BLOCK]
    rows = RaggedCache(forward.new_cache())
    for ids in (prompt, short):
        cache = forward.new_cache()
        forward(ids, cache, Layout([0], [block_segments(0, ids.shape[1], _BLOCK)]))
        rows.join(cache, ids.shape[1])
    layout = Layout([prompt.shape[1], short.shape[1]], [[Segment(_BLOCK)], [Segment(_BLOCK)]])
    both = forward(torch.cat([block, block]), rows.cache, layout)
    single_short = forward.new_cache()
    forward(short, single_short, Layout([0], [block_segments(0, _BLOCK, _BLOCK)]))
    short_alone = forward(block, single_short, single(_BLOCK, [Segment(_BLOCK)]))
    if not (_close(both[:1], alone, scale) and _close(both[1:], short_alone, scale)):
        return "two sequences in one forward do not each give what they give alone"
    return None


def _close(a: torch.Tensor, b: torch.Tensor, scale: float) -> bool:
    a, b = a.float(), b.float().to(a.device)
    if a.shape != b.shape:
        return False
    size = float(b.abs().max()) or 1.0
    return float((a - b).abs().max()) <= scale * size
