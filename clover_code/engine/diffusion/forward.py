"""One model forward over new tokens on top of a cache: the seam the loop drives.

``HFForward`` adapts a transformers causal LM; tests wrap it to script logits.
The cache keyword changed name (``past_key_values`` -> ``cache``) during
transformers 5.x, so it is chosen once from the forward's signature.
"""

from __future__ import annotations

import inspect
from typing import Any, Protocol

import torch

__all__ = ["HFForward", "ModelForward"]


class ModelForward(Protocol):
    """Runs the model over ``ids`` [1, n] after what ``cache`` holds; returns logits [1, n, V].

    An implementation may also have a ``device`` attribute: the loop then keeps
    its token tensors there (no host round trip per step).
    """

    vocab_size: int

    def __call__(self, ids: torch.Tensor, cache: Any) -> torch.Tensor: ...

    def new_cache(self) -> Any:
        """An empty cache for this model."""
        ...

    def cache_length(self, cache: Any) -> int:
        """Tokens the cache holds."""
        ...


class HFForward:
    """``ModelForward`` for a transformers causal LM with a ``DynamicCache``."""

    def __init__(self, model: Any) -> None:
        self.model = model
        config = model.config
        head = model.get_output_embeddings()
        width = head.weight.shape[0] if head is not None else config.vocab_size
        self.vocab_size = int(width)
        params = inspect.signature(model.forward).parameters
        self._cache_kw = "cache" if "cache" in params else "past_key_values"
        self.device = next(model.parameters()).device

    def new_cache(self) -> Any:
        from transformers import DynamicCache

        return DynamicCache(config=self.model.config)

    def cache_length(self, cache: Any) -> int:
        return int(cache.get_seq_length())

    @torch.no_grad()
    def __call__(self, ids: torch.Tensor, cache: Any) -> torch.Tensor:
        out = self.model(input_ids=ids.to(self.device), use_cache=True, **{self._cache_kw: cache})
        logits: torch.Tensor = out.logits
        return logits
