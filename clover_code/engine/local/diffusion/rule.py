"""The ``LowConfidence`` fill rule of block diffusion (SGLang's dLLM algorithm).

One denoising step over a block: for every masked position take the argmax
token and its softmax probability; fill every masked position whose
probability exceeds ``threshold``; if none does, fill the single most
confident masked position. The logits given at position i predict the token at i
(the loop aligns a model that predicts the next token, ``logits_shift``).

The vocabulary-wide work (softmax, argmax) is two tensor operations; the
choice over a block's few dozen positions is made on plain lists, which
costs less per step than a dozen tensor operations of a few dozen elements
each, and gives the loop the block as ints without another copy.
"""

from __future__ import annotations

import functools
import math
import struct
from dataclasses import dataclass

import torch

__all__ = ["StepFill", "low_confidence_step"]


@dataclass(slots=True)
class StepFill:
    """The outcome of one step: the new block, what was filled, and the confidences."""

    ids: torch.Tensor
    """The block after this step, [n]."""
    tokens: list[int]
    """The block after this step as ints (what ``ids`` holds)."""
    positions: list[int]
    """The positions this step filled, in increasing order."""
    confidence: torch.Tensor
    """Float [n]: argmax probability at every position (masked or not)."""
    scores: list[float]
    """``confidence`` as floats."""

    @property
    def filled(self) -> torch.Tensor:
        """Bool [n]: positions filled by this step."""
        out = torch.zeros(len(self.tokens), dtype=torch.bool)
        out[self.positions] = True
        return out.to(self.ids.device)


def low_confidence_step(
    block: torch.Tensor, logits: torch.Tensor, mask_id: int, threshold: float
) -> StepFill:
    """Apply one step of the rule to ``block`` [n] with ``logits`` [n, V]."""
    confidence, argmax = torch.softmax(logits.float(), dim=-1).max(dim=-1)
    tokens: list[int] = block.tolist()
    scores: list[float] = confidence.tolist()
    # Compared in float32, as a float32 tensor compares with a Python float.
    bar = _float32(threshold)
    positions = [i for i, t in enumerate(tokens) if t == mask_id and scores[i] > bar]
    if not positions:
        # Nothing clears the threshold: the most confident masked position
        # (none when nothing is masked).
        top = _most_confident(tokens, scores, mask_id)
        positions = [] if top is None else [top]
    if positions:
        best: list[int] = argmax.tolist()
        for i in positions:
            tokens[i] = best[i]
    ids = torch.tensor(tokens, dtype=block.dtype, device=block.device)
    return StepFill(ids, tokens, positions, confidence, scores)


@functools.lru_cache(maxsize=8)
def _float32(value: float) -> float:
    return float(struct.unpack("f", struct.pack("f", value))[0])


def _most_confident(tokens: list[int], scores: list[float], mask_id: int) -> int | None:
    """The first masked position of the highest score (a NaN counts as highest, as in
    ``torch.argmax``); None when nothing is masked."""
    masked = [i for i, token in enumerate(tokens) if token == mask_id]
    if not masked:
        return None
    total = sum(scores)
    if math.isnan(total):  # rare: a NaN in the logits
        return next(
            (i for i in masked if math.isnan(scores[i])), max(masked, key=scores.__getitem__)
        )
    return max(masked, key=scores.__getitem__)  # the first of equal highest
