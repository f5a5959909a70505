"""One model forward over new tokens on top of a cache: the seam the decoder drives.

``HFForward`` adapts a transformers causal LM; tests wrap it to script logits.
The cache keyword changed name (``past_key_values`` -> ``cache``) during
transformers 5.x, so it is chosen once from the forward's signature.

A forward takes ``ids`` [N, L] (one row per sequence) and a ``Layout``
(``layout.py``): each row's position, its segments and the cached columns it
may see. Positions are passed explicitly and the attention mask is built
from the layout with the model's own mask API, so the full-attention layers
see the prefix, bidirectional blocks and causal spans as the layout says.
The mask reaches the full-attention layers only; linear-attention (Gated
DeltaNet) layers are recurrent and read each row left to right whatever the
mask says, and their state is snapshotted and restored exactly
(``state.py``), or kept at a split point (``split.py``).
"""

from __future__ import annotations

import inspect
from typing import Any, Protocol

import torch

from clover_code.engine.local.diffusion.layout import Layout, Segment, block_segments, single
from clover_code.engine.local.diffusion.split import StateSplit

__all__ = ["HFForward", "ModelForward", "block_causal_mask", "has_linear_layers"]

MidStates = dict[int, tuple[torch.Tensor | None, torch.Tensor | None]]


class ModelForward(Protocol):
    """Runs the model over ``ids`` [N, L] laid out by ``layout``; returns logits [N, L, V].

    ``keep`` asks for the logits of the last ``keep`` positions only (a prefill
    needs one row, not a vocabulary-wide row per prompt token).
    """

    vocab_size: int
    device: torch.device
    splits: bool
    """Whether a forward can keep the linear-attention state at ``layout.split``."""

    def __call__(
        self, ids: torch.Tensor, cache: Any, layout: Layout, keep: int | None = None
    ) -> torch.Tensor: ...

    def new_cache(self) -> Any:
        """An empty cache for this model."""
        ...

    def cache_length(self, cache: Any) -> int:
        """Cache columns (attention keys) the cache holds."""
        ...

    def mid_states(self) -> MidStates:
        """The states kept at the split point of the latest split forward."""
        ...


def has_linear_layers(config: Any) -> bool:
    """Whether the model has recurrent (linear-attention) layers."""
    text = config.get_text_config() if hasattr(config, "get_text_config") else config
    return "linear_attention" in (getattr(text, "layer_types", None) or ())


class HFForward:
    """``ModelForward`` for a transformers causal LM with a ``DynamicCache``."""

    def __init__(self, model: Any, *, block_attention: bool = True) -> None:
        self.model = model
        self.block_attention = block_attention
        """False: every segment is causal (a checkpoint trained that way, or a comparison)."""
        config = model.config
        head = model.get_output_embeddings()
        width = head.weight.shape[0] if head is not None else config.vocab_size
        self.vocab_size = int(width)
        params = inspect.signature(model.forward).parameters
        self._cache_kw = "cache" if "cache" in params else "past_key_values"
        self._keeps = "logits_to_keep" in params
        param = next(model.parameters())
        self.device = param.device
        self.dtype = param.dtype
        self._split = StateSplit.of(model)
        self.splits = self._split.available or not has_linear_layers(config)
        self._mask: tuple[Any, Any] | None = None

    def new_cache(self) -> Any:
        from transformers import DynamicCache

        return DynamicCache(config=self.model.config)

    def cache_length(self, cache: Any) -> int:
        return int(cache.get_seq_length())

    def mid_states(self) -> MidStates:
        return dict(self._split.mid)

    @torch.no_grad()
    def __call__(
        self, ids: torch.Tensor, cache: Any, layout: Layout, keep: int | None = None
    ) -> torch.Tensor:
        """A forward of ``ids`` laid out by ``layout`` after what ``cache`` holds."""
        ids = ids.to(self.device)
        width = ids.shape[1]
        if not self.block_attention:
            layout = _causal(layout)
        # The steps of a block share their layout: its mask is made once.
        key = (tuple(layout.past), layout.shape(), width)
        if self._mask is None or self._mask[0] != key:
            mask = layout.attention_mask(self.model.config, width, self.dtype, self.device)
            self._mask = (key, mask)
        mask = self._mask[1]
        extra: dict[str, Any] = {self._cache_kw: cache}
        if keep is not None and self._keeps:
            extra["logits_to_keep"] = keep
        self._split.mid = {}
        self._split.at = layout.split
        try:
            out = self.model(
                input_ids=ids,
                attention_mask=mask,
                position_ids=layout.positions(width, self.device),
                use_cache=True,
                **extra,
            )
        finally:
            self._split.at = None
        logits: torch.Tensor = out.logits
        return logits[:, -keep:] if keep is not None else logits

    def block(self, ids: torch.Tensor, cache: Any) -> torch.Tensor:
        """One sequence's block ``ids`` [1, n] after all the cache holds (bidirectional)."""
        return self(ids, cache, single(self.cache_length(cache), [Segment(ids.shape[1])]))

    def prefill(
        self, ids: torch.Tensor, cache: Any, *, block_size: int = 32, causal: bool = False
    ) -> torch.Tensor:
        """One sequence's prompt ``ids`` [1, n] after all the cache holds: bidirectional inside
        each block aligned to ``block_size`` (SGLang's dLLM extend mode), or causal."""
        start = self.cache_length(cache)
        if causal:
            segments = [Segment(ids.shape[1], "causal")]
        else:
            segments = block_segments(start, ids.shape[1], block_size)
        return self(ids, cache, single(start, segments))


def _causal(layout: Layout) -> Layout:
    segments = [[Segment(s.length, "causal") for s in row] for row in layout.segments]
    return Layout(layout.past, segments, layout.split, layout.groups)


def block_causal_mask(model: Any, length: int, cache: Any) -> Any:
    """The mask of one row's block of ``length`` tokens after what ``cache`` holds."""
    cached = int(cache.get_seq_length())
    param = next(model.parameters())
    layout = single(cached, [Segment(length)])
    return layout.attention_mask(model.config, length, param.dtype, param.device)
