"""What the block-diffusion decoder takes and gives: options, steps, blocks, statistics."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from clover_code.engine.local.diffusion.controls import Controls
from clover_code.errors import ContextOverflow, EngineError

__all__ = [
    "Block",
    "BlockFinish",
    "DecodeOptions",
    "DecodeStats",
    "PrefillMode",
    "Step",
    "check_prompt",
]

BlockFinish = Literal["stop", "length"]
PrefillMode = Literal["block", "causal"]


@dataclass(slots=True, frozen=True)
class DecodeOptions:
    """How to decode: block geometry, the fill rule, limits and controls."""

    mask_id: int
    block_size: int = 32
    threshold: float = 0.95
    max_new_tokens: int = 4096
    context_window: int = 131_072
    stop_ids: frozenset[int] = frozenset()
    end_id: int | None = None
    """The end-of-response token the end bias lifts (usually ``<|im_end|>``)."""
    controls: Controls = field(default_factory=Controls)
    think_end_id: int | None = None
    starts_in_reasoning: bool = False
    confidences: bool = False
    prefill_chunk: int = 8192
    logits_shift: bool = False
    """True: the logits at position i predict the token at i + 1 (models converted
    from autoregressive ones, e.g. Fast-dLLM v2); the block's first position then
    reads the last row of the forward before it (prefill or the finished block)."""
    prefill: PrefillMode = "block"
    """block: the prompt's whole blocks are encoded with bidirectional attention inside
    each aligned block (SGLang's dLLM extend mode); causal: left to right."""
    merge_commit: bool = True
    """Write a finished block into the cache with the next block's first forward (False:
    with a forward of its own, as a separate commit)."""
    remask_below: float = 0.0
    """Re-denoising: once a block is fully denoised, its positions filled with a
    confidence below this are masked again and denoised once more before the commit
    (``remask.py``); 0: off."""
    remask_rounds: int = 1
    """How many times a block may be re-denoised, at most."""


@dataclass(slots=True)
class Step:
    """One denoising step: the block's generated positions after it."""

    block: int
    step: int
    ids: list[int]
    masked: list[bool]
    confidences: list[float] | None


@dataclass(slots=True)
class Block:
    """A finished block: its generated ids (stop token excluded) and the forwards it cost."""

    block: int
    ids: list[int]
    steps: int | None
    """Forwards spent on the block: its denoising steps, plus its commit forward where
    the commit is not merged into the next block's first forward (None: not known, an
    entry point that reports no steps)."""
    finish: BlockFinish | None
    confidences: list[float] | None = None
    """Per generated id, the probability it was filled with (None: not recorded)."""
    fill_steps: list[int] | None = None
    """Per generated id, the denoising step (from 1) that filled it."""


@dataclass(slots=True)
class DecodeStats:
    """Forward counts of one generation (the forwards its sequence took part in)."""

    prefill_forwards: int = 0
    step_forwards: int = 0
    commit_forwards: int = 0
    tokens: int = 0
    remask_rounds: int = 0
    """Times a block's low-confidence positions were masked again."""
    remasked_tokens: int = 0
    """Positions masked again, over every round."""
    remask_changed: int = 0
    """Of those, the positions denoised again to a different token."""
    remask_forwards: int = 0
    """Denoising steps spent re-denoising (counted in ``step_forwards`` too)."""
    experts: list[list[int]] = field(default_factory=list)
    """Per block, the distinct routed experts each MoE layer used (empty when the model's
    routers are not hooked)."""

    @property
    def experts_per_layer(self) -> float | None:
        """Mean distinct experts per MoE layer per block, or None when not counted."""
        counts = [n for block in self.experts for n in block]
        return sum(counts) / len(counts) if counts else None

    @property
    def forwards(self) -> int:
        """Every forward of the response after the prompt: denoising steps and commits."""
        return self.step_forwards + self.commit_forwards

    @property
    def tokens_per_forward(self) -> float:
        """Generated tokens per forward after the prompt (parallelism achieved)."""
        return self.tokens / self.forwards if self.forwards else 0.0


def check_prompt(prompt: list[int], options: DecodeOptions) -> int:
    """Raise for an empty prompt or one over the context window; else the token budget."""
    if not prompt:
        raise EngineError("the prompt is empty; send at least one message with content")
    room = options.context_window - len(prompt)
    if room <= 0:
        raise ContextOverflow(
            f"the prompt is {len(prompt):,} tokens but the model's context window is "
            f"{options.context_window:,}; compact or clear the conversation"
        )
    return min(options.max_new_tokens, room)
