"""The ``LowConfidence`` fill rule of block diffusion (SGLang's dLLM algorithm).

One denoising step over a block: for every masked position take the argmax
token and its softmax probability; fill every masked position whose
probability exceeds ``threshold``; if none does, fill the single most
confident masked position. The logits given at position i predict the token at i
(the loop aligns a model that predicts the next token, ``logits_shift``).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

__all__ = ["StepFill", "low_confidence_step"]


@dataclass(slots=True)
class StepFill:
    """The outcome of one step: the new block, what was filled, and the confidences."""

    ids: torch.Tensor
    """The block after this step, [n]."""
    filled: torch.Tensor
    """Bool [n]: positions filled by this step."""
    confidence: torch.Tensor
    """Float [n]: argmax probability at every position (masked or not)."""


def low_confidence_step(
    block: torch.Tensor, logits: torch.Tensor, mask_id: int, threshold: float
) -> StepFill:
    """Apply one step of the rule to ``block`` [n] with ``logits`` [n, V]."""
    masked = block == mask_id
    confidence, argmax = torch.softmax(logits.float(), dim=-1).max(dim=-1)
    candidate = confidence.masked_fill(~masked, -float("inf"))
    filled = candidate > threshold
    if not bool(filled.any()):
        # Nothing clears the threshold: the most confident masked position
        # (none is chosen when nothing is masked: its candidate is -inf).
        filled = filled.index_fill(0, candidate.argmax().reshape(1), True) & masked
    ids = torch.where(filled, argmax.to(block.dtype), block)
    return StepFill(ids, filled, confidence)
