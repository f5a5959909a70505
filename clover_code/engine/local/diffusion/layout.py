"""What one forward over several sequences looks like: rows, segments, positions, mask.

A forward runs ``N`` rows of ``L`` new tokens on top of a cache. Row ``b`` is
a sequence whose ``past[b]`` tokens are already encoded: they are its first
``past[b]`` cache columns (``rows.py``), its new tokens take the columns and
positions from there on. The new tokens of a row are ``Segment`` spans laid
end to end from its first new token; whatever follows the last segment is
padding, seen by nobody.

Attention, per row: every query sees the row's cached columns; a query in a
``block`` segment also sees every new token up to the end of its segment (the
segments before it are its prefix, its own segment is bidirectional); a query
in a ``causal`` segment sees new tokens up to itself. A padding query sees
itself only. ``attention_mask`` builds that mask with the model's own mask
interface (``transformers.masking_utils``), so its form suits the model's
attention implementation: bool for sdpa, additive for eager.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import torch

__all__ = ["Layout", "Segment", "block_segments"]

SegmentKind = Literal["block", "causal"]


@dataclass(slots=True, frozen=True)
class Segment:
    """``length`` new tokens attended as one ``kind`` span."""

    length: int
    kind: SegmentKind = "block"


def block_segments(start: int, length: int, block_size: int) -> list[Segment]:
    """``length`` tokens from absolute position ``start`` cut at block boundaries."""
    out: list[Segment] = []
    position, end = start, start + length
    while position < end:
        stop = min(end, (position // block_size + 1) * block_size)
        out.append(Segment(stop - position))
        position = stop
    return out


@dataclass(slots=True)
class Layout:
    """Rows of one forward: prefix lengths and the segments of the new tokens."""

    past: list[int]
    """Per row: tokens of its sequence before this forward (its first new token's position)."""
    segments: list[list[Segment]]
    """Per row: its new tokens, segment after segment from the first; the rest is padding."""
    split: int | None = None
    """Run the linear-attention layers in two calls at this new-token index and keep the
    state between them (``split.py``): the committed block's state, when a commit is merged
    into the next block's first forward."""
    groups: list[list[int]] = field(default_factory=list)
    """Per row, per segment: its expert-routing group (``experts.py``); empty: none."""

    @property
    def rows(self) -> int:
        """Rows in this forward."""
        return len(self.past)

    def used(self, row: int) -> int:
        """New tokens of ``row`` that are not padding."""
        return sum(s.length for s in self.segments[row])

    def shape(self) -> tuple[tuple[tuple[int, str], ...], ...]:
        """The segments of every row as plain values (what the mask depends on, with
        ``past``)."""
        return tuple(tuple((s.length, s.kind) for s in row) for row in self.segments)

    def width(self) -> int:
        """New tokens per row (the longest row; shorter ones are padded)."""
        return max((self.used(b) for b in range(self.rows)), default=0)

    def positions(self, width: int, device: torch.device) -> torch.Tensor:
        """Position ids [N, width]: each row's new tokens numbered on from its past."""
        offsets = torch.tensor(self.past, dtype=torch.long, device=device)[:, None]
        return offsets + torch.arange(width, device=device)[None, :]

    def bounds(self, width: int) -> tuple[list[list[int]], list[list[int]]]:
        """Per row and new token: the first and one past the last new token it may see."""
        lows: list[list[int]] = []
        highs: list[list[int]] = []
        for segments in self.segments:
            low: list[int] = []
            high: list[int] = []
            start = 0
            for segment in segments:
                for i in range(start, start + segment.length):
                    low.append(0)
                    high.append(start + segment.length if segment.kind == "block" else i + 1)
                start += segment.length
            for i in range(start, width):  # padding: itself only
                low.append(i)
                high.append(i + 1)
            lows.append(low)
            highs.append(high)
        return lows, highs

    def allowed(self, width: int, columns: int, device: torch.device) -> torch.Tensor:
        """Bool [N, width, columns]: which cache column each query of each row may see,
        row b's new tokens being at columns ``past[b]`` onward."""
        lows, highs = self.bounds(width)
        low = torch.tensor(lows, dtype=torch.long, device=device)[:, :, None]
        high = torch.tensor(highs, dtype=torch.long, device=device)[:, :, None]
        past = torch.tensor(self.past, dtype=torch.long, device=device)[:, None, None]
        new = torch.arange(columns, device=device)[None, None, :] - past
        return (new < 0) | ((new >= low) & (new < high))

    def attention_mask(self, config: Any, width: int, dtype: Any, device: Any) -> Any:
        """The mask for the model's full-attention layers, in its implementation's form."""
        from transformers.masking_utils import ALL_MASK_ATTENTION_FUNCTIONS

        implementation = getattr(config, "_attn_implementation", None) or "sdpa"
        if implementation.startswith("flash"):
            raise ValueError(
                f"block attention needs a mask and {implementation} takes none; load the "
                "model with attn_implementation sdpa or eager"
            )
        columns = max(self.past, default=0) + width
        allowed = self.allowed(width, columns, device)
        start = columns - width

        def mask_function(batch: Any, head: Any, q: Any, kv: Any) -> Any:
            return allowed[batch, q - start, kv]

        interface = ALL_MASK_ATTENTION_FUNCTIONS[implementation]
        return interface(
            batch_size=self.rows,
            q_length=width,
            kv_length=columns,
            q_offset=start,
            kv_offset=0,
            mask_function=mask_function,
            attention_mask=None,
            allow_is_causal_skip=False,
            dtype=dtype,
            config=config,
            use_vmap=False,
            device=device,
        )


def single(past: int, segments: Sequence[Segment]) -> Layout:
    """A one-row layout over a cache whose columns are all the row's."""
    return Layout([past], [list(segments)])
