"""Snapshot, restore and commit of a hybrid cache around denoising steps.

A denoising step runs the model over the blocks being decoded; that forward
appends their keys/values to every full-attention layer and advances the
conv and recurrent states of every linear-attention (Gated DeltaNet) layer.
Only committed blocks may leave a trace. ``CacheCheckpoint`` records just
enough to undo a step: the attention length (undone by cropping, no copy)
and a clone of the small fixed-size linear-attention states (undone by an
in-place copy, which keeps the tensors' addresses). Copying the whole cache
(``deepcopy``) would also copy every key and value of the prompt.

``commit`` keeps a forward's first columns instead of undoing it: the rows
that committed a block keep its keys/values and the linear-attention state
after it (the state at the forward's split point, or after the whole
forward); the other rows keep the state they had at the checkpoint. (In a
``RaggedCache`` the attention side of both is the rows' lengths, ``rows.py``.)

It reads the layer objects of transformers' ``Cache`` (``keys``/``values`` on
attention layers; ``conv_states``/``recurrent_states`` dicts on linear ones).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import torch

__all__ = ["CacheCheckpoint"]

MidStates = dict[int, tuple[torch.Tensor | None, torch.Tensor | None]]
_KINDS = ("conv", "recurrent")


@dataclass(slots=True)
class _Saved:
    """One linear-attention state: where it lives and its clone (None: not made yet)."""

    layer: int
    kind: str
    states: dict[int, Any]
    live: torch.Tensor | None
    saved: torch.Tensor | None


@dataclass(slots=True)
class CacheCheckpoint:
    """What ``restore`` needs to put a cache back as it was at ``take``."""

    attention: list[tuple[Any, int]] = field(default_factory=list)
    """(layer, key/value length) per attention layer."""
    linear: list[_Saved] = field(default_factory=list)
    flags: list[tuple[Any, dict[int, bool]]] = field(default_factory=list)
    """(layer, has_previous_state) per linear-attention layer."""
    layers: list[Any] = field(default_factory=list)

    @classmethod
    def take(cls, cache: Any) -> CacheCheckpoint:
        """Record the state of ``cache`` now."""
        point = cls(layers=list(cache.layers))
        for index, layer in enumerate(cache.layers):
            if hasattr(layer, "conv_states"):
                for kind in _KINDS:
                    states = getattr(layer, f"{kind}_states")
                    ready = getattr(layer, f"is_{kind}_states_initialized")
                    live = states.get(0) if ready.get(0) else None
                    saved = None if live is None else live.clone()
                    point.linear.append(_Saved(index, kind, states, live, saved))
                point.flags.append((layer, dict(layer.has_previous_state)))
            if hasattr(layer, "keys") and not getattr(layer, "ragged", False):
                # A ragged layer (``rows.py``) is undone by its lengths, not by cropping.
                point.attention.append((layer, layer.get_seq_length()))
        return point

    def retake(self, cache: Any) -> CacheCheckpoint:
        """Record ``cache`` again, reusing this checkpoint's buffers when the states are the same.

        The linear-attention states are updated in place, so between blocks
        they are the same tensors: one fused copy refreshes every saved clone.
        """
        same = list(cache.layers) == self.layers and all(
            s.live is not None and s.states.get(0) is s.live for s in self.linear
        )
        if not same:
            return CacheCheckpoint.take(cache)
        pairs = [
            (s.saved, s.live) for s in self.linear if s.saved is not None and s.live is not None
        ]
        if pairs:
            torch._foreach_copy_([p[0] for p in pairs], [p[1] for p in pairs])
        self.attention = [(layer, layer.get_seq_length()) for layer, _ in self.attention]
        for layer, flags in self.flags:
            flags.update(layer.has_previous_state)
        return self

    def length(self) -> int:
        """The attention length recorded (0 without attention layers)."""
        return self.attention[0][1] if self.attention else 0

    def restore(self) -> None:
        """Put the cache back: crop attention, copy the linear states back in place."""
        self._crop(0)
        fast: list[tuple[torch.Tensor, torch.Tensor]] = []
        for s in self.linear:
            if s.saved is None:
                # Not yet made at the checkpoint: the next forward makes it afresh.
                _set(self.layers[s.layer], s.kind, None)
            elif s.live is not None and s.states.get(0) is s.live:
                fast.append((s.live, s.saved))  # type: ignore[arg-type]
            else:  # a layer replaced a tensor: put a copy back
                s.states[0] = s.saved.clone()
        if fast:
            torch._foreach_copy_([p[0] for p in fast], [p[1] for p in fast])
        for layer, flags in self.flags:
            layer.has_previous_state.update(flags)

    def commit(self, columns: int, rows: torch.Tensor, mid: MidStates | None) -> None:
        """Keep the first ``columns`` new keys/values and, for the ``rows`` (bool [N]) that
        committed, the linear-attention state in ``mid`` (None: the state after the forward);
        the other rows go back to their state at the checkpoint."""
        self._crop(columns)
        for s in self.linear:
            layer = self.layers[s.layer]
            now = getattr(layer, f"{s.kind}_states").get(0)
            if now is None:
                continue
            kept = now if mid is None else mid.get(s.layer, (None, None))[_KINDS.index(s.kind)]
            if kept is None:
                raise ValueError(f"no state was kept for layer {s.layer} at the split point")
            before = s.saved if s.saved is not None else torch.zeros_like(kept)
            shape = (-1,) + (1,) * (kept.dim() - 1)
            value = torch.where(rows.to(kept.device).reshape(shape), kept, before)
            if s.live is not None and now is s.live:
                s.live.copy_(value)
            else:
                _set(layer, s.kind, value)
        for layer, _ in self.flags:
            for i in layer.has_previous_state:
                layer.has_previous_state[i] = bool(layer.is_conv_states_initialized.get(i))

    def _crop(self, extra: int) -> None:
        for layer, length in self.attention:
            keys = layer.keys
            if keys is not None and keys.dim() > 1 and keys.shape[-2] > length + extra:
                layer.keys = keys[..., : length + extra, :]
                layer.values = layer.values[..., : length + extra, :]


def _set(layer: Any, kind: str, value: torch.Tensor | None) -> None:
    """Put ``value`` as a linear layer's ``kind`` state (None: not made)."""
    getattr(layer, f"{kind}_states")[0] = value
    getattr(layer, f"is_{kind}_states_initialized")[0] = value is not None
    if value is None:
        layer.has_previous_state[0] = False
