"""The model card's decoding controls: repetition penalty and gradual end biases.

Applied to a block's logits before each denoising step:

* repetition penalty (the usual CTRL/transformers form): the logit of every
  token generated in earlier blocks of this response is divided by
  ``penalty`` when positive and multiplied by it when negative (block level:
  the positions of one block are decided together, in parallel);
* an end-of-response bias on the stop token that grows linearly once the
  response is longer than ``end_bias_after`` tokens, so very long answers
  are nudged to close instead of running to the token limit;
* an end-of-thinking bias on ``</think>`` that grows the same way once the
  thinking phase is longer than ``think_bias_after`` tokens.

A zero slope or a penalty of 1.0 turns a control off.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

__all__ = ["Controls"]


@dataclass(slots=True, frozen=True)
class Controls:
    """Settings of the decoding controls (defaults on, as on the model card)."""

    repetition_penalty: float = 1.05
    end_bias_after: int = 16_384
    """Response length (tokens) after which the end-of-response bias starts to grow."""
    end_bias_per_1k: float = 1.0
    """Logit added to the stop token per 1,000 tokens past ``end_bias_after``."""
    think_bias_after: int = 8_192
    """Thinking length (tokens) after which the end-of-thinking bias starts to grow."""
    think_bias_per_1k: float = 1.0
    """Logit added to ``</think>`` per 1,000 thinking tokens past ``think_bias_after``."""

    def penalty(self, seen: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor] | None:
        """Per-token factors for positive and negative logits, from a [V] mask of seen tokens.

        Computed once per block; ``apply`` then costs three tensor ops a step.
        """
        if self.repetition_penalty == 1.0:
            return None
        one = torch.ones((), dtype=torch.float32, device=seen.device)
        positive = torch.where(seen, one / self.repetition_penalty, one)
        negative = torch.where(seen, one * self.repetition_penalty, one)
        return positive, negative

    def apply(
        self,
        logits: torch.Tensor,
        *,
        penalty: tuple[torch.Tensor, torch.Tensor] | None,
        generated: int,
        thinking: int | None,
        stop_id: int | None,
        think_end_id: int | None,
    ) -> torch.Tensor:
        """Return float ``logits`` [n, V] adjusted (``penalty`` from ``penalty()``)."""
        if penalty is not None:
            logits = logits * torch.where(logits > 0, penalty[0], penalty[1])
        end = _ramp(generated, self.end_bias_after, self.end_bias_per_1k)
        if end and stop_id is not None:
            logits[:, stop_id] += end
        if thinking is not None and think_end_id is not None:
            think = _ramp(thinking, self.think_bias_after, self.think_bias_per_1k)
            if think:
                logits[:, think_end_id] += think
        return logits


def _ramp(length: int, after: int, per_1k: float) -> float:
    return max(0, length - after) * per_1k / 1000.0 if per_1k else 0.0
