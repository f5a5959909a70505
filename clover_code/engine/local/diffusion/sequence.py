"""One sequence being decoded: its block, its controls, its decisions, its statistics.

Everything here is per sequence, whatever else shares the forward: the
block's ids, the ``LowConfidence`` decision on its own logits, the penalties
over its own response (the committed blocks and the current draft, so a
block cannot repeat itself while it denoises), its stop tokens, token budget
and thinking length. The batch decoder (``batch.py``) runs the forwards and
hands each sequence the rows of the logits that are its block.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

import torch

from clover_code.engine.local.diffusion.options import Block, DecodeOptions, DecodeStats, Step
from clover_code.engine.local.diffusion.remask import Remask
from clover_code.engine.local.diffusion.rule import low_confidence_step

__all__ = ["Sequence", "SequenceState"]

SequenceState = Literal["new", "denoising", "finished", "done"]
"""new: waiting for its prefill; denoising: a block has masked positions; finished: its
block is complete and waits to be committed; done: no more output (stop, length,
cancelled)."""


@dataclass(slots=True, eq=False)
class Sequence:
    """A sequence in the batch decoder (created by ``BatchDecoder.add``)."""

    prompt: list[int]
    options: DecodeOptions
    budget: int
    sink: Callable[[Step | Block], None]
    cancelled: Callable[[], bool]
    device: torch.device
    stats: DecodeStats = field(default_factory=DecodeStats)
    state: SequenceState = "new"
    past: int = 0
    """Tokens encoded in the cache (the current block's first position)."""
    index: int = 0
    """The current block's number in the response."""
    fixed: int = 0
    """Positions at the block's start that are not generated (the prompt's tail)."""
    ids: torch.Tensor = field(default_factory=lambda: torch.zeros(0, dtype=torch.long))
    """The current block: fixed positions, then the generated ones (masked until filled)."""
    steps: int = 0
    """Forwards spent on the current block."""
    fill_confidence: list[float] = field(default_factory=list)
    """Per position of the current block, the probability it was filled with."""
    fill_step: list[int] = field(default_factory=list)
    """Per position of the current block, the step that filled it (0: not yet)."""
    generated: list[int] = field(default_factory=list)
    counts: dict[int, int] = field(default_factory=dict)
    """How often each token appears in the response so far: the committed blocks and the
    filled positions of the current draft (the penalties; tokens not seen are absent)."""
    thinking: int | None = None
    pending: list[int] | None = None
    """A finished block's tokens, written into the cache by the next forward."""
    last_row: torch.Tensor | None = None
    """With shifted logits: the row that predicts the block's first position."""
    group: int | None = None
    """The current block's expert-routing group."""
    done_group: int | None = None
    """The finished block's group, until the forward that commits it."""
    finish: str | None = None
    commit_cost: int = 0
    """Forwards a finished block costs after its steps: 1 when its commit is a forward of
    its own, 0 when it rides on the next block's first forward."""
    remask: Remask = field(init=False, repr=False)
    """Re-denoising of the current block's low-confidence positions (``remask.py``)."""

    def __post_init__(self) -> None:
        self.thinking = 0 if self.options.starts_in_reasoning else None
        self.remask = Remask(self.options.remask_below, self.options.remask_rounds)

    @property
    def mask_id(self) -> int:
        return self.options.mask_id

    def start_block(self) -> None:
        """Begin the next block: the prompt's tail (first block) then masked positions.

        A sequence whose finished block is still pending starts the block after it.
        """
        opts = self.options
        bs = opts.block_size
        head = self.prompt[self.past :] if self.index == 0 and self.pending is None else []
        free = min(bs - len(head), self.budget - len(self.generated))
        self.fixed = len(head)
        self.ids = torch.tensor(head + [opts.mask_id] * free, dtype=torch.long, device=self.device)
        self.steps = 0
        self.fill_confidence = [1.0] * len(self.ids)
        self.fill_step = [0] * len(self.ids)
        self.remask.start()
        self.state = "denoising"

    @property
    def length(self) -> int:
        """Positions of the current block taking part in a forward."""
        return int(self.ids.shape[0])

    def filled(self) -> int:
        """Generated positions of the current block filled so far."""
        return int((self.ids[self.fixed :] != self.mask_id).sum())

    @property
    def free(self) -> int:
        return self.length - self.fixed

    def advance(self, logits: torch.Tensor, confidences: bool) -> None:
        """One denoising step with the block's aligned logits [length, V]."""
        opts = self.options
        self.steps += 1
        self.stats.step_forwards += 1
        self.stats.remask_forwards += self.remask.active
        counts = self.counts
        logits = opts.controls.apply(
            logits.float(),
            penalty=opts.controls.penalty(counts, self.device),
            generated=len(self.generated),
            thinking=self.thinking,
            stop_id=opts.end_id,
            think_end_id=opts.think_end_id,
        )
        mask = opts.mask_id
        fill = low_confidence_step(self.ids, logits, mask, opts.threshold)
        self.ids = fill.ids
        self.remask.record(fill)
        # The draft's new tokens count from the next step on (so the block cannot repeat
        # itself while it denoises), and stay counted once the block is committed.
        for i in fill.positions:
            if i >= self.fixed:
                token = fill.tokens[i]
                counts[token] = counts.get(token, 0) + 1
        gen = fill.tokens[self.fixed :]
        masked = [t == mask for t in gen]
        confidence = fill.scores
        for k in fill.positions:
            self.fill_confidence[k], self.fill_step[k] = confidence[k], self.steps
        shown = confidence[self.fixed :] if confidences else None
        self.sink(Step(self.index, self.steps, gen, masked, shown))
        end = _stop_position(gen, masked, opts.stop_ids)
        if (end is not None or not any(masked)) and self._mask_again(end, counts):
            return
        if end is not None:
            self._emit(gen[:end], "stop")
        elif not any(masked):
            room = self.budget - len(self.generated)
            self._emit(gen, "length" if len(gen) >= room else None)

    def _mask_again(self, end: int | None, counts: dict[int, int]) -> bool:
        """Mask the block's low-confidence positions again, up to the stop token at ``end``
        (None: the whole block); False when the block is to be committed as it is."""
        span = self.length if end is None else self.fixed + end + 1
        again = self.remask.again(self.ids, self.fixed, span, self.mask_id, self.stats)
        if again is None:
            return False
        # The tokens taken back no longer count towards the penalties.
        for token in self.ids[again].tolist():
            left = counts[token] - 1
            if left:
                counts[token] = left
            else:
                del counts[token]
        self.ids = self.ids.masked_fill(again, self.mask_id)
        return True

    def count_commit(self) -> None:
        """The finished block was written with a forward of its own."""
        self.stats.commit_forwards += 1

    def _emit(self, ids: list[int], finish: Literal["stop", "length"] | None) -> None:
        cost = self.steps + (self.commit_cost if finish is None else 0)
        kept = slice(self.fixed, self.fixed + len(ids))
        block = Block(
            self.index, ids, cost, finish, self.fill_confidence[kept], self.fill_step[kept]
        )
        self.generated.extend(ids)
        self.stats.tokens += len(ids)
        if self.thinking is not None:
            end = self.options.think_end_id
            self.thinking = None if end is not None and end in ids else self.thinking + len(ids)
        if finish is None:
            self.pending = self.ids.tolist()
            self.state = "finished"
        else:
            self.finish = finish
            self.state = "done"
        self.sink(block)

    def after_commit(self) -> None:
        """The finished block is in the cache: the next one starts after it."""
        assert self.pending is not None
        self.past += len(self.pending)
        self.pending = None
        self.index += 1


def _stop_position(gen: list[int], masked: list[bool], stops: frozenset[int]) -> int | None:
    """Index of the first stop token once everything before it is filled, else None."""
    for i, token in enumerate(gen):
        if masked[i]:
            return None
        if token in stops:
            return i
    return None
