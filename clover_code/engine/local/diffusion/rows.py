"""Several sequences in one cache, each at its own length.

Sequences join and leave the batch at their own block boundaries, and each
commits its blocks when they are done, whatever the others are doing, so
the rows of the cache have different lengths that change one row at a time.
``RaggedCache`` is a transformers ``DynamicCache`` whose full-attention
layers are ``RaggedLayer`` objects: each keeps its keys/values in one buffer
[rows, heads, capacity, dim] where row b's tokens are its first ``lengths[b]``
columns. A forward writes row b's new keys at columns ``lengths[b]`` onward
and returns the buffer up to the longest row plus the new tokens; the mask
(``layout.py``) lets each row see its own columns only. A denoising step is
undone for attention by leaving ``lengths`` as they were (what it wrote past
them is never read and is overwritten next time); a commit moves a row's
length on.

The linear-attention (Gated DeltaNet) layers are transformers' own: their
states are per row already (first dimension) and are restored or committed
per row by ``state.py``. A sequence is prefilled on its own, in a one-row
``DynamicCache``, and copied in as a new row when it joins; a row that has
no state yet gets zeros, which the recurrence treats exactly as no state
(its start).

It reads and writes the layer objects of transformers' ``Cache``, as
``state.py`` does: ``keys``/``values`` of attention layers, the state dicts
and their flags of linear-attention layers.
"""

from __future__ import annotations

from typing import Any

import torch

__all__ = ["RaggedCache", "RaggedLayer"]

_KINDS = ("conv", "recurrent")


def _dynamic_layer() -> type:
    from transformers.cache_utils import DynamicLayer

    return DynamicLayer


class RaggedLayer(_dynamic_layer()):  # type: ignore[misc]
    """A full-attention cache layer whose rows have their own lengths (``RaggedCache``)."""

    ragged = True

    def __init__(self, owner: RaggedCache) -> None:
        super().__init__()
        self.owner = owner
        self.keys: torch.Tensor | None = None
        self.values: torch.Tensor | None = None

    def update(
        self, key_states: torch.Tensor, value_states: torch.Tensor, *args: Any, **kwargs: Any
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Write each row's new keys/values after its own tokens; the buffer up to the
        longest row plus the new tokens."""
        rows, heads, new, dim = key_states.shape
        width = self.owner.longest() + new
        self._reserve(key_states, value_states, width)
        assert self.keys is not None and self.values is not None
        index = self.owner.columns(new, key_states.device)[:, None, :, None]
        self.keys.scatter_(2, index.expand(rows, heads, new, dim), key_states)
        values_index = index.expand(rows, heads, new, value_states.shape[-1])
        self.values.scatter_(2, values_index, value_states)
        return self.keys[:, :, :width], self.values[:, :, :width]

    def get_seq_length(self) -> int:
        return self.owner.longest()

    def _reserve(self, keys: torch.Tensor, values: torch.Tensor, width: int) -> None:
        """Make the buffers [rows, heads, >= width, dim], keeping what they hold."""
        current = 0 if self.keys is None else int(self.keys.shape[2])
        if self.keys is not None and current >= width and self.keys.shape[0] == keys.shape[0]:
            return
        capacity = max(width, 2 * current, 64)
        rows, heads = keys.shape[0], keys.shape[1]
        grown_k = keys.new_zeros((rows, heads, capacity, keys.shape[-1]))
        grown_v = values.new_zeros((rows, values.shape[1], capacity, values.shape[-1]))
        if self.keys is not None and self.values is not None and current:
            grown_k[:, :, :current] = self.keys
            grown_v[:, :, :current] = self.values
        self.keys, self.values = grown_k, grown_v
        self.is_initialized = True
        self.device = keys.device

    def put(self, keys: torch.Tensor, values: torch.Tensor) -> None:
        """Set the buffers as they are (joins and leaves)."""
        self.keys, self.values = keys, values
        self.is_initialized = True
        self.device = keys.device


class RaggedCache:
    """A batched hybrid cache whose rows (sequences) have their own lengths."""

    def __init__(self, cache: Any) -> None:
        """Wrap ``cache``, an empty ``DynamicCache`` made for the model."""
        self.cache: Any = cache
        self.lengths: list[int] = []
        """Tokens each row holds (its next position)."""
        self._columns: tuple[tuple[int, torch.device], torch.Tensor] | None = None
        for index, layer in enumerate(self.cache.layers):
            if not hasattr(layer, "conv_states"):
                self.cache.layers[index] = RaggedLayer(self)

    @property
    def rows(self) -> int:
        """Rows (sequences) in the cache."""
        return len(self.lengths)

    def longest(self) -> int:
        """The longest row's length."""
        return max(self.lengths, default=0)

    def columns(self, new: int, device: torch.device) -> torch.Tensor:
        """[rows, new]: the columns each row's ``new`` tokens of this forward go to."""
        key = (new, device)
        if self._columns is None or self._columns[0] != key:
            start = torch.tensor(self.lengths, dtype=torch.long, device=device)[:, None]
            self._columns = (key, start + torch.arange(new, device=device)[None, :])
        assert self._columns is not None
        return self._columns[1]

    def grow(self, rows: torch.Tensor, tokens: int) -> None:
        """The rows in ``rows`` (bool [N]) keep the first ``tokens`` of this forward."""
        for b, keep in enumerate(rows.tolist()):
            if keep:
                self.lengths[b] += tokens
        self._columns = None

    def join(self, cache: Any, length: int) -> int:
        """Copy in the one-row ``cache`` (a prefilled ``DynamicCache`` holding ``length``
        tokens) as a new row; its index."""
        rows = self.rows
        for index, (mine, theirs) in enumerate(zip(self.cache.layers, cache.layers, strict=True)):
            if isinstance(mine, RaggedLayer):
                _join_attention(mine, theirs, rows, length)
            elif hasattr(mine, "conv_states"):
                _join_linear(mine, theirs, rows)
            else:  # pragma: no cover - a layer kind the model's config did not say
                raise ValueError(f"cache layer {index} is neither attention nor linear attention")
        self.lengths.append(length)
        self._columns = None
        return rows

    def keep(self, rows: list[int]) -> None:
        """Keep only ``rows`` (in that order)."""
        if rows == list(range(self.rows)):
            return
        index = torch.tensor(rows, dtype=torch.long)
        for layer in self.cache.layers:
            if isinstance(layer, RaggedLayer):
                if layer.keys is not None and layer.values is not None:
                    if rows:
                        keys = layer.keys.index_select(0, index.to(layer.keys.device))
                        values = layer.values.index_select(0, index.to(layer.values.device))
                        layer.put(keys, values)
                    else:
                        layer.keys = layer.values = None
            elif hasattr(layer, "conv_states"):
                for kind in _KINDS:
                    states = getattr(layer, f"{kind}_states")
                    ready = getattr(layer, f"is_{kind}_states_initialized")
                    if ready.get(0):
                        if rows:
                            states[0] = states[0].index_select(0, index.to(states[0].device))
                        else:
                            states[0] = None
                            ready[0] = False
                            layer.has_previous_state[0] = False
        self.lengths = [self.lengths[b] for b in rows]
        self._columns = None


def _join_attention(mine: RaggedLayer, theirs: Any, rows: int, length: int) -> None:
    their_keys = getattr(theirs, "keys", None)
    ready = isinstance(their_keys, torch.Tensor) and their_keys.dim() > 1
    if not ready and mine.keys is None:
        return
    template_k = their_keys if ready else mine.keys
    template_v = theirs.values if ready else mine.values
    assert template_k is not None and template_v is not None
    current = 0 if mine.keys is None else int(mine.keys.shape[2])
    capacity = max(current, length, 64)
    heads, dim, vdim = template_k.shape[1], template_k.shape[-1], template_v.shape[-1]
    keys = template_k.new_zeros((rows + 1, heads, capacity, dim))
    values = template_v.new_zeros((rows + 1, template_v.shape[1], capacity, vdim))
    if mine.keys is not None and mine.values is not None and rows:
        keys[:rows, :, :current] = mine.keys
        values[:rows, :, :current] = mine.values
    if ready:
        assert their_keys is not None
        keys[rows, :, :length] = their_keys[0, :, :length]
        values[rows, :, :length] = theirs.values[0, :, :length]
    mine.put(keys, values)


def _join_linear(mine: Any, theirs: Any, rows: int) -> None:
    for kind in _KINDS:
        ready_mine = bool(getattr(mine, f"is_{kind}_states_initialized").get(0)) and rows > 0
        ready_theirs = getattr(theirs, f"is_{kind}_states_initialized").get(0)
        if not ready_mine and not ready_theirs:
            continue  # no side has a state yet: the next forward makes one for all
        states_mine = getattr(mine, f"{kind}_states")
        states_theirs = getattr(theirs, f"{kind}_states")
        template = states_mine[0] if ready_mine else states_theirs[0]
        ours = states_mine[0] if ready_mine else template.new_zeros((rows, *template.shape[1:]))
        new = states_theirs[0] if ready_theirs else template.new_zeros((1, *template.shape[1:]))
        states_mine[0] = torch.cat([ours, new], dim=0)
        getattr(mine, f"is_{kind}_states_initialized")[0] = True
        mine.has_previous_state[0] = True
        if kind == "conv" and mine.conv_kernel_size.get(0) is None:
            mine.conv_kernel_size[0] = theirs.conv_kernel_size.get(0) or template.shape[-1]
        if getattr(mine, "device", None) is None:
            mine.device = template.device
            mine.dtype = template.dtype
