"""Re-denoising a block's low-confidence positions before it is committed.

The ``LowConfidence`` rule fills a position once and never looks at it again,
even when it was filled early, with most of the block still masked, or by the
fallback that fills the single most confident position when none clears the
threshold. With ``remask_below`` set, once a block is fully denoised (or
filled up to a stop token), the positions it filled with a confidence below
that value are masked again and the block goes on denoising: the same rule,
now with every other position of the block as context. A block is
re-denoised at most ``remask_rounds`` times, then committed.

The extra steps are ordinary denoising steps: the block's cache checkpoint is
restored after each (``state.py``), and only the final block is written to
the cache by the commit, so re-denoising leaves no other trace. Everything
here is per sequence, so a batch decodes each row as it would alone.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from clover_code.engine.local.diffusion.options import DecodeStats
from clover_code.engine.local.diffusion.rule import StepFill

__all__ = ["Remask"]


@dataclass(slots=True)
class Remask:
    """One sequence's re-denoising of its current block."""

    below: float
    """Positions filled with a confidence below this are masked again (0: off)."""
    rounds: int
    """Re-denoising rounds a block may take, at most."""
    confidence: torch.Tensor | None = None
    """Float [length]: the confidence each position of the block was filled with (inf
    where not filled by this block)."""
    done: int = 0
    """Rounds the current block has taken."""
    positions: torch.Tensor | None = None
    """Bool [length]: the positions of the round under way (None: none is)."""
    before: torch.Tensor | None = None
    """The block's ids when that round began."""

    @property
    def on(self) -> bool:
        """Whether blocks are re-denoised at all."""
        return self.below > 0.0 and self.rounds > 0

    @property
    def active(self) -> bool:
        """Whether the block is being re-denoised now."""
        return self.positions is not None

    def start(self) -> None:
        """A new block: nothing filled, no round taken."""
        self.confidence = None
        self.done = 0
        self.positions = self.before = None

    def record(self, fill: StepFill) -> None:
        """Keep the confidence of the positions ``fill`` filled."""
        if not self.on:
            return
        known = self.confidence
        if known is None:
            known = torch.full_like(fill.confidence, float("inf"))
        self.confidence = torch.where(fill.filled, fill.confidence, known)

    def again(
        self, ids: torch.Tensor, fixed: int, span: int, mask_id: int, stats: DecodeStats
    ) -> torch.Tensor | None:
        """The block is denoised up to ``span``: the positions to mask again (bool
        [length]), or None to commit it. Counts the round that just ended in ``stats``."""
        self._settle(ids, mask_id, stats)
        if not self.on or self.done >= self.rounds or self.confidence is None:
            return None
        low = self.confidence < self.below
        low[:fixed] = False
        low[span:] = False
        count = int(low.sum())
        if count == 0:
            return None
        self.done += 1
        stats.remask_rounds += 1
        stats.remasked_tokens += count
        self.positions, self.before = low, ids.clone()
        return low

    def _settle(self, ids: torch.Tensor, mask_id: int, stats: DecodeStats) -> None:
        """Count the positions the round under way denoised to another token."""
        if self.positions is None or self.before is None:
            return
        changed = self.positions & (ids != self.before) & (ids != mask_id)
        stats.remask_changed += int(changed.sum())
        self.positions = self.before = None
