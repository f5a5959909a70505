"""One model forward over new tokens on top of a cache: the seam the loop drives.

``HFForward`` adapts a transformers causal LM; tests wrap it to script logits.
The cache keyword changed name (``past_key_values`` -> ``cache``) during
transformers 5.x, so it is chosen once from the forward's signature.

Attention inside a block is bidirectional: a block forward (``__call__``)
passes a block-causal mask built by the model's own mask API
(``transformers.masking_utils.create_causal_mask`` with an ``or_mask_function``
that opens every key of the current forward to every query of it), so the
cached prefix stays causal while the block's positions see each other. The
prompt goes through ``prefill``: plain causal attention. The mask reaches the
full-attention layers only; linear-attention (Gated DeltaNet) layers are
recurrent and read the block left to right whatever the mask says, and their
state is snapshotted and restored exactly as before (``state.py``).
"""

from __future__ import annotations

import inspect
from typing import Any, Protocol

import torch

__all__ = ["HFForward", "ModelForward", "block_causal_mask"]


class ModelForward(Protocol):
    """Runs the model over ``ids`` [1, n] after what ``cache`` holds; returns logits [1, n, V].

    An implementation may also have a ``device`` attribute: the loop then keeps
    its token tensors there (no host round trip per step).
    """

    vocab_size: int

    def __call__(self, ids: torch.Tensor, cache: Any) -> torch.Tensor: ...

    # Optional: ``prefill(ids, cache)``, the same with causal attention for the
    # prompt; an implementation without it has ``__call__`` used for the prompt.

    def new_cache(self) -> Any:
        """An empty cache for this model."""
        ...

    def cache_length(self, cache: Any) -> int:
        """Tokens the cache holds."""
        ...


class HFForward:
    """``ModelForward`` for a transformers causal LM with a ``DynamicCache``."""

    def __init__(self, model: Any, *, block_attention: bool = True) -> None:
        self.model = model
        self.block_attention = block_attention
        """False: every forward is causal (a checkpoint trained that way, or a comparison)."""
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
        """A block forward: the block's positions attend to each other and the prefix."""
        ids = ids.to(self.device)
        mask = block_causal_mask(self.model, ids.shape[1], cache) if self.block_attention else None
        return self._run(ids, cache, mask)

    @torch.no_grad()
    def prefill(self, ids: torch.Tensor, cache: Any) -> torch.Tensor:
        """A prompt forward: causal attention, as the prompt was written."""
        return self._run(ids.to(self.device), cache, None)

    def _run(self, ids: torch.Tensor, cache: Any, mask: Any) -> torch.Tensor:
        extra: dict[str, Any] = {} if mask is None else {"attention_mask": mask}
        out = self.model(input_ids=ids, use_cache=True, **{self._cache_kw: cache}, **extra)
        logits: torch.Tensor = out.logits
        return logits


def block_causal_mask(model: Any, length: int, cache: Any) -> Any:
    """The 4D mask for a forward of ``length`` block tokens after what ``cache`` holds.

    Made by the model's own ``create_causal_mask`` (so its form suits the
    model's attention implementation: bool for sdpa, additive for eager) with
    the keys of this forward opened to all of its queries. A 4D mask passes
    through the model's own mask creation unchanged, and linear-attention
    layers take no mask from it.
    """
    from transformers.masking_utils import create_causal_mask

    start = int(cache.get_seq_length())
    config = model.config.get_text_config() if hasattr(model.config, "get_text_config") else None
    param = next(model.parameters())
    # Only the shape, dtype and device of the embeddings are read.
    stub = torch.empty((1, length, 0), dtype=param.dtype, device=param.device)

    def in_block(batch: Any, head: Any, q: Any, kv: Any) -> Any:
        return kv >= start

    return create_causal_mask(config or model.config, stub, None, cache, or_mask_function=in_block)
