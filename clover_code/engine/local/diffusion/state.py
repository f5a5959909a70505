"""Snapshot and restore of a hybrid cache around denoising steps.

A denoising step runs the model over the block being decoded; that forward
appends the block's keys/values to every full-attention layer and advances
the conv and recurrent states of every linear-attention (Gated DeltaNet)
layer. Only the final, committed block may leave a trace. ``CacheCheckpoint``
records just enough to undo a step: the attention length (undone by cropping,
no copy) and a clone of the small fixed-size linear-attention states (undone
by an in-place copy, which keeps the tensors' addresses). Copying the whole
cache (``deepcopy``) would also copy every key and value of the prompt.

It reads the layer objects of transformers' ``Cache`` (``keys``/``values`` on
attention layers; ``conv_states``/``recurrent_states`` dicts on linear ones).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import torch

__all__ = ["CacheCheckpoint"]


@dataclass(slots=True)
class CacheCheckpoint:
    """What ``restore`` needs to put a cache back as it was at ``take``."""

    attention: list[tuple[Any, int]] = field(default_factory=list)
    """(layer, key/value length) per attention layer."""
    copies: list[tuple[dict[int, Any], int, torch.Tensor, torch.Tensor]] = field(
        default_factory=list
    )
    """(states dict, index, live tensor, saved clone): restored by an in-place copy."""
    slow: list[tuple[Any, str, int, torch.Tensor | None]] = field(default_factory=list)
    """(layer, "conv"/"recurrent", index, saved) for states that changed shape or were absent."""
    flags: list[tuple[Any, dict[int, bool]]] = field(default_factory=list)
    """(layer, has_previous_state) per linear-attention layer."""

    @classmethod
    def take(cls, cache: Any) -> CacheCheckpoint:
        """Record the state of ``cache`` now."""
        point = cls()
        for layer in cache.layers:
            if hasattr(layer, "conv_states"):
                for kind in ("conv", "recurrent"):
                    states = getattr(layer, f"{kind}_states")
                    ready = getattr(layer, f"is_{kind}_states_initialized")
                    for i, state in states.items():
                        if ready[i] and state is not None:
                            point.copies.append((states, i, state, state.clone()))
                        else:
                            point.slow.append((layer, kind, i, None))
                point.flags.append((layer, dict(layer.has_previous_state)))
            if hasattr(layer, "keys"):
                point.attention.append((layer, layer.get_seq_length()))
        return point

    def retake(self, cache: Any) -> CacheCheckpoint:
        """Record ``cache`` again, reusing this checkpoint's buffers when the states are the same.

        The linear-attention states are updated in place, so between blocks
        they are the same tensors: one fused copy refreshes every saved clone.
        """
        if self.slow or any(states[i] is not live for states, i, live, _ in self.copies):
            return CacheCheckpoint.take(cache)
        if self.copies:
            torch._foreach_copy_([c[3] for c in self.copies], [c[2] for c in self.copies])
        self.attention = [(layer, layer.get_seq_length()) for layer, _ in self.attention]
        for layer, flags in self.flags:
            flags.update(layer.has_previous_state)
        return self

    def restore(self) -> None:
        """Put the cache back: crop attention, copy the linear states back in place."""
        for layer, length in self.attention:
            keys = layer.keys
            if keys is not None and keys.dim() > 1 and keys.shape[-2] > length:
                layer.keys = keys[..., :length, :]
                layer.values = layer.values[..., :length, :]
        if all(states[i] is live for states, i, live, _ in self.copies):
            if self.copies:
                torch._foreach_copy_([c[2] for c in self.copies], [c[3] for c in self.copies])
        else:  # a layer replaced a tensor (past recording): put copies back
            for states, i, _, saved in self.copies:
                states[i] = saved.clone()
        for layer, kind, i, _ in self.slow:
            # Not yet created at the checkpoint: the next forward creates it afresh.
            getattr(layer, f"{kind}_states")[i] = None
            getattr(layer, f"is_{kind}_states_initialized")[i] = False
        for layer, flags in self.flags:
            layer.has_previous_state.update(flags)
