"""The linear-attention state between two parts of one forward.

When a block's commit is merged into the next block's first denoising
forward, one forward carries the committed block and then the new block. The
stock Gated DeltaNet layers keep only the state after their whole input,
but the cache must end up holding the state after the committed block (the
new block is a draft). ``StateSplit`` wraps the ``forward`` of each
linear-attention module of the loaded model (the model's code is not copied
or changed): when a split point is set, the module runs twice, on the tokens
before it and on the rest, and the state between the two calls is kept. Two
calls of a recurrent layer on consecutive parts compute what one call does
(the second starts from the state the first leaves), so the outputs are the
one-call outputs up to float rounding.

A module is taken for a linear-attention layer when it has ``layer_idx``,
``conv1d`` and ``A_log`` (transformers' Gated DeltaNet); a model with
linear-attention cache layers but no such module cannot split, and the loop
then commits with a forward of its own.
"""

from __future__ import annotations

import weakref
from typing import Any

import torch

__all__ = ["StateSplit", "linear_state"]

_SPLITS: weakref.WeakKeyDictionary[Any, StateSplit] = weakref.WeakKeyDictionary()


def linear_state(layer: Any) -> tuple[torch.Tensor | None, torch.Tensor | None]:
    """A cache layer's (conv, recurrent) state tensors, None where not yet made."""
    conv = layer.conv_states.get(0) if layer.is_conv_states_initialized.get(0) else None
    recurrent = (
        layer.recurrent_states.get(0) if layer.is_recurrent_states_initialized.get(0) else None
    )
    return conv, recurrent


def _linear_modules(model: Any) -> list[Any]:
    return [
        m
        for m in model.modules()
        if isinstance(getattr(m, "layer_idx", None), int)
        and hasattr(m, "conv1d")
        and hasattr(m, "A_log")
    ]


class StateSplit:
    """Wraps the model's linear-attention modules so one forward can keep a mid state.

    One per model (``of``): the wrappers are put on once, whatever uses them.
    """

    @classmethod
    def of(cls, model: Any) -> StateSplit:
        """The model's split, made (and its modules wrapped) on first use."""
        split = _SPLITS.get(model)
        if split is None:
            split = _SPLITS[model] = cls(model)
        return split

    def __init__(self, model: Any) -> None:
        self.modules = _linear_modules(model)
        self.at: int | None = None
        """The new-token index to split at during the next forward (None: no split)."""
        self.mid: dict[int, tuple[torch.Tensor | None, torch.Tensor | None]] = {}
        """Per layer index: clones of the (conv, recurrent) state at the split point."""
        for module in self.modules:
            module.forward = self._wrapped(module, module.forward)

    @property
    def available(self) -> bool:
        """Whether the model has linear-attention modules this can split."""
        return bool(self.modules)

    def _wrapped(self, module: Any, original: Any) -> Any:
        def forward(*args: Any, **kwargs: Any) -> Any:
            at = self.at
            hidden = kwargs["hidden_states"] if "hidden_states" in kwargs else args[0]
            if at is None or not 0 < at < hidden.shape[1]:
                return original(*args, **kwargs)
            cache = kwargs.get("cache", kwargs.get("cache_params", kwargs.get("past_key_values")))
            mask = kwargs.get("attention_mask")
            if mask is not None and getattr(mask, "ndim", 0) == 2:
                raise ValueError("a split forward takes no padding mask")
            rest = {k: v for k, v in kwargs.items() if k != "hidden_states"}
            tail = args[1:] if "hidden_states" not in kwargs else args
            first = original(hidden[:, :at], *tail, **rest)
            if cache is not None:
                conv, recurrent = linear_state(cache.layers[module.layer_idx])
                self.mid[module.layer_idx] = (
                    None if conv is None else conv.clone(),
                    None if recurrent is None else recurrent.clone(),
                )
            second = original(hidden[:, at:], *tail, **rest)
            return torch.cat([first, second], dim=1)

        return forward
