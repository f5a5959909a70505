"""Several sequences in one cache: rows joined and dropped between blocks.

A sequence is prefilled on its own (a one-row cache); between blocks it
joins the batch's cache as a new row, and a finished one leaves it. Rows
have different lengths, so attention keys/values are padded on the left to
the longest row, and ``valid`` [N, T] says which columns hold a row's own
tokens (padding and holes are never attended). Linear-attention states are
per row already (their first dimension); a row that has none yet gets zeros,
which the recurrence treats exactly as no state (its start).

It reads and writes the layer objects of transformers' ``Cache``, as
``state.py`` does: ``keys``/``values`` of attention layers, the state dicts
and their flags of linear-attention layers.
"""

from __future__ import annotations

from typing import Any

import torch

__all__ = ["RowCache"]

_KINDS = ("conv", "recurrent")


class RowCache:
    """A batched cache (one row per sequence) and the columns each row may see."""

    def __init__(self) -> None:
        self.cache: Any = None
        self.valid = torch.zeros((0, 0), dtype=torch.bool)
        """Bool [N, T]: the cached columns each row may attend to."""

    @property
    def rows(self) -> int:
        """Rows (sequences) in the cache."""
        return int(self.valid.shape[0])

    @property
    def columns(self) -> int:
        """Attention columns (the longest row, with its padding)."""
        return int(self.valid.shape[1])

    def join(self, cache: Any, length: int) -> int:
        """Add the one-row ``cache`` holding ``length`` tokens as a new row; its index."""
        device = self.valid.device
        if self.cache is None:
            self.cache = cache
            self.valid = torch.ones((1, length), dtype=torch.bool, device=_device(cache, device))
            return 0
        total = max(self.columns, length)
        for mine, theirs in zip(self.cache.layers, cache.layers, strict=True):
            if hasattr(mine, "keys"):
                _join_attention(mine, theirs, self.rows, total)
            if hasattr(mine, "conv_states"):
                _join_linear(mine, theirs, self.rows)
        device = self.valid.device
        pad_old = torch.zeros((self.rows, total - self.columns), dtype=torch.bool, device=device)
        new = torch.zeros((1, total), dtype=torch.bool, device=device)
        new[0, total - length :] = True
        self.valid = torch.cat([torch.cat([pad_old, self.valid], dim=1), new], dim=0)
        return self.rows - 1

    def keep(self, rows: list[int]) -> None:
        """Keep only ``rows`` (in that order); drop the leading columns no row needs."""
        if not rows:
            self.cache = None
            self.valid = torch.zeros((0, 0), dtype=torch.bool, device=self.valid.device)
            return
        if rows == list(range(self.rows)):
            return
        index = torch.tensor(rows, dtype=torch.long)
        for layer in self.cache.layers:
            if hasattr(layer, "keys") and _ready(layer):
                layer.keys = layer.keys.index_select(0, index.to(layer.keys.device))
                layer.values = layer.values.index_select(0, index.to(layer.values.device))
            if hasattr(layer, "conv_states"):
                for kind in _KINDS:
                    states = getattr(layer, f"{kind}_states")
                    if getattr(layer, f"is_{kind}_states_initialized").get(0):
                        states[0] = states[0].index_select(0, index.to(states[0].device))
        self.valid = self.valid.index_select(0, index.to(self.valid.device))
        used = self.valid.any(dim=0).nonzero()
        first = int(used[0]) if used.numel() else self.columns
        if first:
            self.trim(first)

    def trim(self, columns: int) -> None:
        """Drop the first ``columns`` columns (padding every row has)."""
        for layer in self.cache.layers:
            if hasattr(layer, "keys") and _ready(layer):
                layer.keys = layer.keys[..., columns:, :]
                layer.values = layer.values[..., columns:, :]
        self.valid = self.valid[:, columns:]

    def grow(self, committed: torch.Tensor, columns: int) -> None:
        """``columns`` were appended: valid for the rows in ``committed`` (bool [N]), holes
        for the others."""
        added = committed.to(self.valid.device)[:, None].expand(self.rows, columns)
        self.valid = torch.cat([self.valid, added], dim=1)


def _device(cache: Any, fallback: torch.device) -> torch.device:
    for layer in cache.layers:
        keys = getattr(layer, "keys", None)
        if isinstance(keys, torch.Tensor) and keys.numel():
            return keys.device
    return fallback


def _ready(layer: Any) -> bool:
    keys = getattr(layer, "keys", None)
    return isinstance(keys, torch.Tensor) and keys.dim() > 1


def _padded(tensor: torch.Tensor, columns: int) -> torch.Tensor:
    """``tensor`` [n, H, t, D] padded on the left with zeros to ``columns``."""
    missing = columns - tensor.shape[-2]
    if missing <= 0:
        return tensor
    pad = tensor.new_zeros((*tensor.shape[:-2], missing, tensor.shape[-1]))
    return torch.cat([pad, tensor], dim=-2)


def _join_attention(mine: Any, theirs: Any, rows: int, total: int) -> None:
    if not _ready(mine) and not _ready(theirs):
        return
    template = mine if _ready(mine) else theirs
    shape = template.keys.shape

    def side(layer: Any, count: int) -> tuple[torch.Tensor, torch.Tensor]:
        if _ready(layer):
            return _padded(layer.keys, total), _padded(layer.values, total)
        empty = template.keys.new_zeros((count, shape[1], total, shape[3]))
        return empty, template.values.new_zeros((count, shape[1], total, template.values.shape[3]))

    keys, values = side(mine, rows)
    their_keys, their_values = side(theirs, 1)
    mine.keys = torch.cat([keys, their_keys], dim=0)
    mine.values = torch.cat([values, their_values], dim=0)
    mine.is_initialized = True
    if hasattr(template, "dtype"):
        mine.dtype = template.dtype
    mine.device = template.device


def _join_linear(mine: Any, theirs: Any, rows: int) -> None:
    for kind in _KINDS:
        ready_mine = getattr(mine, f"is_{kind}_states_initialized").get(0)
        ready_theirs = getattr(theirs, f"is_{kind}_states_initialized").get(0)
        if not ready_mine and not ready_theirs:
            continue
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
