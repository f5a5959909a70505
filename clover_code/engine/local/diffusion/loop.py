"""The block-diffusion decoding loop over a torch model with a hybrid cache.

The response is generated in blocks of ``block_size`` positions aligned to
absolute positions (as SGLang does: the prompt's last partial block is the
head of the first generated block). A block starts with its free positions
masked; each denoising step runs the model over the block on top of the
cached prefix (the prompt was prefilled causally; the block's positions attend
to each other, see ``forward.py``) and applies the ``LowConfidence`` rule (``rule.py``). The
step's forward must leave no trace in the cache, so the cache is restored
from a ``CacheCheckpoint`` after every step. When no position is masked any
more, one more forward over the finished block writes its keys/values and
linear-attention state: the block becomes prefix for the next.

A stop token ends the response inside a block as soon as every position
before it is filled; ``max_new_tokens`` and the context window cut the last
block. The loop is synchronous and yields ``Step`` and ``Block`` results;
backends run it in a worker thread.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Literal

import torch

from clover_code.engine.local.diffusion.controls import Controls
from clover_code.engine.local.diffusion.experts import ExpertRouting
from clover_code.engine.local.diffusion.forward import ModelForward
from clover_code.engine.local.diffusion.rule import low_confidence_step
from clover_code.engine.local.diffusion.state import CacheCheckpoint
from clover_code.errors import ContextOverflow, EngineError

__all__ = ["Block", "BlockDiffusion", "DecodeOptions", "DecodeStats", "Step", "check_prompt"]

BlockFinish = Literal["stop", "length"]


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
    reads the last row of the previous forward (prefill or commit)."""


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
    """A committed block: its generated ids (stop token excluded) and cost."""

    block: int
    ids: list[int]
    steps: int
    finish: BlockFinish | None


@dataclass(slots=True)
class DecodeStats:
    """Forward counts of one generation."""

    prefill_forwards: int = 0
    step_forwards: int = 0
    commit_forwards: int = 0
    tokens: int = 0
    experts: list[list[int]] = field(default_factory=list)
    """Per committed block, the distinct routed experts each MoE layer used (empty
    when the model's routers are not hooked)."""

    @property
    def experts_per_layer(self) -> float | None:
        """Mean distinct experts per MoE layer per block, or None when not counted."""
        counts = [n for block in self.experts for n in block]
        return sum(counts) / len(counts) if counts else None

    @property
    def tokens_per_forward(self) -> float:
        """Generated tokens per denoising or commit forward (parallelism achieved)."""
        forwards = self.step_forwards + self.commit_forwards
        return self.tokens / forwards if forwards else 0.0


class BlockDiffusion:
    """Generates a response block by block with ``forward``."""

    def __init__(
        self, forward: ModelForward, options: DecodeOptions, routing: ExpertRouting | None = None
    ) -> None:
        if not 0.0 <= options.threshold <= 1.0:
            raise ValueError("threshold must be between 0 and 1")
        self.forward = forward
        self.options = options
        self.routing = routing
        """Hooks on the model's MoE routers: experts counted per block, and restricted
        to the block's kept set when expert selection is on (``experts.py``)."""
        self.stats = DecodeStats()
        self._device = torch.device("cpu")
        self._checkpoint: CacheCheckpoint | None = None
        self._last_row: torch.Tensor | None = None

    def generate(
        self, prompt: list[int], cancelled: Callable[[], bool] = lambda: False
    ) -> Iterator[Step | Block]:
        """Yield a ``Step`` per denoising step and a ``Block`` per committed block."""
        if self.routing is not None:
            self.routing.release()
        try:
            yield from self._generate(prompt, cancelled)
        finally:
            # A cancelled block leaves no restriction behind for the next request.
            if self.routing is not None:
                self.routing.release()

    def _generate(self, prompt: list[int], cancelled: Callable[[], bool]) -> Iterator[Step | Block]:
        opts = self.options
        budget = check_prompt(prompt, opts)
        self.stats = DecodeStats()
        device = getattr(self.forward, "device", None)
        self._device = torch.device(device) if device is not None else torch.device("cpu")
        cache = self.forward.new_cache()
        self._checkpoint = None
        bs = opts.block_size
        aligned = len(prompt) // bs * bs
        prefill = getattr(self.forward, "prefill", self.forward)
        self._last_row = None
        for start in range(0, aligned, opts.prefill_chunk):
            chunk = prompt[start : min(aligned, start + opts.prefill_chunk)]
            self._keep_last(prefill(self._tensor([chunk]), cache))
            self.stats.prefill_forwards += 1
        head = prompt[aligned:]
        generated: list[int] = []
        # How often each token appears in the response so far (the penalties).
        counts = torch.zeros(self.forward.vocab_size, dtype=torch.float32, device=self._device)
        thinking = 0 if opts.starts_in_reasoning else None
        index = 0
        while len(generated) < budget:
            block = self._block(cache, head, index, len(generated), counts, thinking, cancelled)
            result: Block | None = None
            for item in block:
                if isinstance(item, Block):
                    result = item
                else:
                    yield item
            if result is None:
                return  # cancelled
            room_left = budget - len(generated)
            if len(result.ids) > room_left or (
                result.finish is None and len(result.ids) == room_left
            ):
                result.ids = result.ids[:room_left]
                result.finish = "length"
            generated.extend(result.ids)
            if result.ids:
                new = self._tensor(result.ids)
                counts.index_add_(0, new, torch.ones(len(result.ids), device=self._device))
            self.stats.tokens += len(result.ids)
            if thinking is not None:
                if opts.think_end_id is not None and opts.think_end_id in result.ids:
                    thinking = None
                else:
                    thinking += len(result.ids)
            if result.finish is None:
                self._keep_last(self.forward(self._tensor([head + result.ids]), cache))
                self.stats.commit_forwards += 1
            if self.routing is not None:
                self.stats.experts.append(self.routing.end_block())
            yield result
            if result.finish is not None:
                return
            head = []
            index += 1

    def _keep_last(self, logits: torch.Tensor) -> None:
        """Keep the last row of a prefill or commit forward (it predicts the next block's first
        position when the logits are shifted)."""
        if self.options.logits_shift:
            self._last_row = logits[0, -1]

    def _aligned(self, logits: torch.Tensor) -> torch.Tensor:
        """Block logits [n, V] with row i predicting position i, whatever the model's alignment."""
        if not self.options.logits_shift:
            return logits
        # No earlier forward only when the whole prompt heads the block: its first
        # position is a prompt token then, and its row is never read.
        first = self._last_row if self._last_row is not None else logits[0]
        return torch.cat([first[None].to(logits.dtype), logits[:-1]])

    def _tensor(self, ids: list[int] | list[list[int]]) -> torch.Tensor:
        return torch.tensor(ids, dtype=torch.long, device=self._device)

    def _block(
        self,
        cache: object,
        head: list[int],
        index: int,
        generated: int,
        counts: torch.Tensor,
        thinking: int | None,
        cancelled: Callable[[], bool],
    ) -> Iterator[Step | Block]:
        opts = self.options
        fixed = len(head)
        ids = self._tensor(head + [opts.mask_id] * (opts.block_size - fixed))
        checkpoint = self._checkpoint = (
            CacheCheckpoint.take(cache)
            if self._checkpoint is None
            else self._checkpoint.retake(cache)
        )
        mask_id = opts.mask_id
        if self.routing is not None:
            self.routing.begin_block()
        penalty = opts.controls.penalty(counts) if generated else None
        gen = ids.tolist()[fixed:]
        step = 0
        # The small per-step bookkeeping runs on a Python list of the block
        # (one device sync per step) rather than as many tiny tensor ops.
        while mask_id in gen:
            if cancelled():
                return
            logits = self._aligned(self.forward(ids[None], cache)[0])
            checkpoint.restore()
            self.stats.step_forwards += 1
            logits = opts.controls.apply(
                logits.float(),
                penalty=penalty,
                generated=generated,
                thinking=thinking,
                stop_id=opts.end_id,
                think_end_id=opts.think_end_id,
            )
            fill = low_confidence_step(ids, logits, mask_id, opts.threshold)
            ids = fill.ids
            step += 1
            gen = ids.tolist()[fixed:]
            masked = [t == mask_id for t in gen]
            confidences = fill.confidence[fixed:].tolist() if opts.confidences else None
            yield Step(index, step, gen, masked, confidences)
            end = _stop_position(gen, masked, opts.stop_ids)
            if end is not None:
                yield Block(index, gen[:end], step, "stop")
                return
        yield Block(index, gen, step, None)


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


def _stop_position(gen: list[int], masked: list[bool], stops: frozenset[int]) -> int | None:
    """Index of the first stop token once everything before it is filled, else None."""
    for i, token in enumerate(gen):
        if masked[i]:
            return None
        if token in stops:
            return i
    return None
