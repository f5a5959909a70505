"""The model card's decoding controls: response-only penalties and gradual end biases.

Applied to a block's logits before each denoising step:

* repetition penalty (the CTRL/transformers form): the logit of every token
  generated in earlier blocks of this response is divided by ``penalty``
  when positive and multiplied by it when negative;
* presence and frequency penalties (the OpenAI form): ``presence`` is
  subtracted from the logit of every token already in the response, and
  ``frequency`` times the number of times it appeared;
* an end-of-response bias on the stop token that grows linearly once the
  response is longer than ``end_bias_after`` tokens, so very long answers
  are nudged to close instead of running to the token limit;
* an end-of-thinking bias on ``</think>`` that grows the same way once the
  thinking phase is longer than ``think_bias_after`` tokens.

The penalties count the response only, never the prompt: the blocks already
committed and the positions of the current block filled so far, recounted
at every denoising step, so a block cannot repeat itself while it denoises.
A zero slope or penalty (1.0 for the repetition penalty) turns a control off.

Defaults: a checkpoint's ``generation_config.json`` may carry any of these
settings under the same names (``repetition_penalty``, ``presence_penalty``,
``frequency_penalty``, ``end_bias_after``, ``end_bias_per_1k``,
``think_bias_after``, ``think_bias_per_1k``); its values take the place of
ours (``for_checkpoint``), and values the user set explicitly take the place
of both.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any, NamedTuple

import torch

from clover_code.engine.base import CONTROL_KEYS, control_value

__all__ = ["Controls", "Penalty"]


class Penalty(NamedTuple):
    """Adjustments for one step, on the seen tokens only: factors for their positive and
    negative logits, a shift each.

    Every other token's logit is left as it is (a factor of 1, a shift of 0), so only
    the seen columns are touched: a few dozen tokens against a vocabulary-wide pass.
    """

    columns: torch.Tensor
    """Long [k]: the tokens seen in the response (count > 0)."""
    positive: torch.Tensor | None
    """0-dim: the factor of a seen token's positive logit."""
    negative: torch.Tensor | None
    """0-dim: the factor of a seen token's negative logit."""
    shift: torch.Tensor | None
    """Float [k]: added to each seen token's logit."""


@dataclass(slots=True, frozen=True)
class Controls:
    """Settings of the decoding controls (defaults on, as on the model card)."""

    repetition_penalty: float = 1.05
    presence_penalty: float = 0.0
    frequency_penalty: float = 0.0
    end_bias_after: int = 16_384
    """Response length (tokens) after which the end-of-response bias starts to grow."""
    end_bias_per_1k: float = 1.0
    """Logit added to the stop token per 1,000 tokens past ``end_bias_after``."""
    think_bias_after: int = 8_192
    """Thinking length (tokens) after which the end-of-thinking bias starts to grow."""
    think_bias_per_1k: float = 1.0
    """Logit added to ``</think>`` per 1,000 thinking tokens past ``think_bias_after``."""

    @classmethod
    def for_checkpoint(cls, path: Path, explicit: dict[str, float | int]) -> Controls:
        """Our defaults, then the checkpoint's ``generation_config.json``, then ``explicit``."""
        names = {f.name for f in fields(cls)}
        unknown = set(explicit) - names
        if unknown:
            raise ValueError(f"unknown decoding control(s): {', '.join(sorted(unknown))}")
        values: dict[str, Any] = {}
        try:
            card = json.loads((path / "generation_config.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            card = {}
        if isinstance(card, dict):
            for key in CONTROL_KEYS:
                value = control_value(key, card.get(key))
                if value is not None:
                    values[key] = value
            for key in ("end_bias_after", "think_bias_after"):
                count = card.get(key)
                if isinstance(count, int) and not isinstance(count, bool) and count >= 0:
                    values[key] = count
            for key in ("end_bias_per_1k", "think_bias_per_1k"):
                slope = control_value("presence_penalty", card.get(key))  # a float >= 0
                if slope is not None:
                    values[key] = slope
        values.update(explicit)
        return replace(cls(), **values)

    def penalty(
        self, counts: torch.Tensor | Mapping[int, int], device: torch.device | str = "cpu"
    ) -> Penalty | None:
        """The adjustments from the response's token counts (the committed blocks and the
        current draft's filled positions): a [V] float tensor, or the seen tokens each
        with its count (> 0), made into tensors on ``device``; None when nothing is to
        change."""
        factors = self.repetition_penalty != 1.0
        shifts = self.presence_penalty != 0.0 or self.frequency_penalty != 0.0
        if not (factors or shifts):
            return None
        if isinstance(counts, torch.Tensor):
            columns = (counts > 0).nonzero().flatten()
            device = counts.device
        else:
            columns = torch.tensor(list(counts), dtype=torch.long, device=device)
        if not columns.numel():
            return None
        positive = negative = shift = None
        if factors:
            positive, negative = _factors(self.repetition_penalty, torch.device(device))
        if shifts:
            if isinstance(counts, torch.Tensor):
                seen = counts[columns]
            else:
                seen = torch.tensor(list(counts.values()), dtype=torch.float32, device=device)
            shift = -(self.presence_penalty * torch.ones_like(seen) + self.frequency_penalty * seen)
        return Penalty(columns, positive, negative, shift)

    def apply(
        self,
        logits: torch.Tensor,
        *,
        penalty: Penalty | None,
        generated: int,
        thinking: int | None,
        stop_id: int | None,
        think_end_id: int | None,
    ) -> torch.Tensor:
        """Return float ``logits`` [n, V] adjusted (``penalty`` from ``penalty()``)."""
        if penalty is not None:
            seen = logits.index_select(1, penalty.columns)
            if penalty.positive is not None and penalty.negative is not None:
                seen = seen * torch.where(seen > 0, penalty.positive, penalty.negative)
            if penalty.shift is not None:
                seen = seen + penalty.shift
            logits = logits.index_copy(1, penalty.columns, seen)
        end = _ramp(generated, self.end_bias_after, self.end_bias_per_1k)
        if end and stop_id is not None:
            logits[:, stop_id] += end
        if thinking is not None and think_end_id is not None:
            think = _ramp(thinking, self.think_bias_after, self.think_bias_per_1k)
            if think:
                logits[:, think_end_id] += think
        return logits


@functools.lru_cache(maxsize=8)
def _factors(penalty: float, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
    """The float32 factors of a seen token's positive and negative logits (made once:
    two tensor operations fewer per step; never written to)."""
    one = torch.ones((), dtype=torch.float32, device=device)
    return one / penalty, one * penalty


def _ramp(length: int, after: int, per_1k: float) -> float:
    return max(0, length - after) * per_1k / 1000.0 if per_1k else 0.0
