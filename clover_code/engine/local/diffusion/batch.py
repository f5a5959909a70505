"""Several sequences decoded in the same forwards.

N sequences that each denoise one block are one forward of N rows: on a GPU
it costs little more than one row, the expert weights being read once for
all of them. Each sequence goes its own way (``sequence.py``): its own
``LowConfidence`` decisions, stops, budget and controls, its own block
boundaries. Every forward carries, for each sequence, what it needs next:

* its block, for a denoising step;
* a block it just finished, which this forward commits to the cache, then its
  next block, masked, for that block's first step: a block costs its
  denoising steps and no extra forward (the linear-attention state after the
  finished block is kept at the split point, ``split.py``);
* a new sequence's first block, right after its prompt was prefilled on its
  own (a one-row cache copied in as a row, ``rows.py``).

Rows are padded to the longest; a finished sequence leaves at once and a
waiting one takes its place at the next forward, so nobody waits for anybody
else's block. When the model cannot split the state, a finished block is
committed with a forward of its own.

Any exception from a forward is left to the caller: the batch's state is
then unknown, so the caller drops it (``close``).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from typing import Any

import torch

from clover_code.engine.local.diffusion.experts import ExpertRouting, Plan
from clover_code.engine.local.diffusion.forward import ModelForward
from clover_code.engine.local.diffusion.layout import Layout, Segment, block_segments
from clover_code.engine.local.diffusion.options import Block, DecodeOptions, Step, check_prompt
from clover_code.engine.local.diffusion.rows import RaggedCache
from clover_code.engine.local.diffusion.sequence import Sequence
from clover_code.engine.local.diffusion.state import CacheCheckpoint

__all__ = ["BatchDecoder"]


class BatchDecoder:
    """Decodes up to ``max_batch`` sequences at a time, the rest waiting their turn."""

    def __init__(
        self,
        forward: ModelForward,
        options: DecodeOptions,
        routing: ExpertRouting | None = None,
        max_batch: int = 8,
    ) -> None:
        if not 0.0 <= options.threshold <= 1.0:
            raise ValueError("threshold must be between 0 and 1")
        if max_batch < 1:
            raise ValueError("max_batch must be at least 1")
        self.forward = forward
        self.options = options
        self.routing = routing
        self.max_batch = max_batch
        self.merge = options.merge_commit and forward.splits
        """Commits ride on the next block's first forward (else a forward of their own)."""
        self.rows: list[Sequence] = []
        self.waiting: deque[Sequence] = deque()
        self.cache: RaggedCache | None = None
        self._checkpoint: CacheCheckpoint | None = None
        self._current = False
        """Whether the cache is as ``_checkpoint`` recorded it (a step was undone since)."""
        self._device = torch.device(getattr(forward, "device", "cpu"))
        self.forwards = 0
        """Forwards run (prefills, steps and commits; each counts once, whatever its rows)."""

    @property
    def busy(self) -> bool:
        """Whether a sequence is decoding or waiting to."""
        return bool(self.rows or self.waiting)

    def add(
        self,
        prompt: list[int],
        options: DecodeOptions | None = None,
        *,
        sink: Callable[[Step | Block], None],
        cancelled: Callable[[], bool] = lambda: False,
    ) -> Sequence:
        """Queue a sequence; it joins at the next forward there is room in. Raises for a
        prompt that cannot be decoded (empty, over the context window)."""
        opts = options or self.options
        if (opts.block_size, opts.mask_id) != (self.options.block_size, self.options.mask_id):
            raise ValueError("every sequence of a batch needs the same block size and mask id")
        budget = check_prompt(prompt, opts)
        sequence = Sequence(list(prompt), opts, budget, sink, cancelled, self._device)
        sequence.commit_cost = 0 if self.merge else 1
        self.waiting.append(sequence)
        return sequence

    def step(self) -> bool:
        """Run the next forward (joining sequences are prefilled first); False when idle."""
        self._leave()
        self._join()
        if not self.rows:
            return self.busy
        commits = [row.state == "finished" for row in self.rows]
        if any(commits) and not self.merge:
            self._commit_alone(commits)
            commits = [False] * len(self.rows)
        self._run(commits)
        return self.busy

    def close(self) -> None:
        """Drop every sequence and the cache (a failed forward, or the end)."""
        for row in self.rows:
            self._end_groups(row)
        self.rows = []
        self.waiting.clear()
        self.cache = None
        self._checkpoint = None
        if self.routing is not None:
            self.routing.release()

    # -- joining and leaving ---------------------------------------------------

    def _leave(self) -> None:
        for row in self.rows:
            if row.state != "done" and row.cancelled():
                row.state, row.finish = "done", "cancelled"
        staying = [b for b, row in enumerate(self.rows) if row.state != "done"]
        if len(staying) == len(self.rows):
            return
        for row in self.rows:
            if row.state == "done":
                self._end_groups(row)
        self.rows = [self.rows[b] for b in staying]
        assert self.cache is not None
        self.cache.keep(staying)
        self._checkpoint = None

    def _join(self) -> None:
        while self.waiting and len(self.rows) < self.max_batch:
            sequence = self.waiting.popleft()
            if sequence.cancelled():
                sequence.state, sequence.finish = "done", "cancelled"
                continue
            prefilled = self._prefill(sequence)
            if self.cache is None:
                self.cache = RaggedCache(self.forward.new_cache())
            self.cache.join(prefilled, sequence.past)
            self.rows.append(sequence)
            self._checkpoint = None

    def _prefill(self, sequence: Sequence) -> Any:
        """Encode the prompt's whole blocks into a one-row cache of the sequence's own."""
        opts = self.options
        bs = opts.block_size
        aligned = len(sequence.prompt) // bs * bs
        cache = self.forward.new_cache()
        chunk = max(bs, opts.prefill_chunk // bs * bs)
        last: torch.Tensor | None = None
        if self.routing is not None:
            self.routing.prepare(None, {})
        for start in range(0, aligned, chunk):
            ids = sequence.prompt[start : min(aligned, start + chunk)]
            if opts.prefill == "block":
                segments = block_segments(start, len(ids), bs)
            else:
                segments = [Segment(len(ids), "causal")]
            logits = self.forward(self._ids([ids]), cache, Layout([start], [segments]), keep=1)
            last = logits[0, -1]
            sequence.stats.prefill_forwards += 1
            self.forwards += 1
        sequence.past = aligned
        sequence.last_row = last if opts.logits_shift else None
        return cache

    # -- forwards ---------------------------------------------------------------

    def _commit_alone(self, commits: list[bool]) -> None:
        """Write the finished blocks with a forward of their own (no state split)."""
        bs = self.options.block_size
        ids, segments, groups = [], [], []
        plans: dict[int, Plan] = {}
        for row, commit in zip(self.rows, commits, strict=True):
            if commit:
                assert row.pending is not None
                ids.append(self._ids(row.pending))
                segments.append([Segment(bs)])
                groups.append([_gid(row.group)])
                if row.group is not None:
                    plans[row.group] = self._commit_plan(row.group)
            else:
                ids.append(self._ids([self.options.mask_id]))
                segments.append([])
                groups.append([])
        layout = Layout([row.past for row in self.rows], segments, groups=groups)
        checkpoint = self._take()
        self._route(layout, plans)
        logits = self._forward(ids, layout)
        mask = torch.tensor(commits)
        checkpoint.commit(bs, mask, None)
        self._current = False
        assert self.cache is not None
        self.cache.grow(mask, bs)
        for b, row in enumerate(self.rows):
            if commits[b]:
                row.count_commit()
                if self.options.logits_shift:
                    row.last_row = logits[b, bs - 1]
                row.done_group, row.group = row.group, None
                self._after_commit(row)

    def _run(self, commits: list[bool]) -> None:
        """One forward: finished blocks committed, every row's block one step further."""
        opts = self.options
        bs = opts.block_size
        ids: list[torch.Tensor] = []
        segments: list[list[Segment]] = []
        groups: list[list[int]] = []
        plans: dict[int, Plan] = {}
        active: list[bool] = []
        for row, commit in zip(self.rows, commits, strict=True):
            if commit or row.state == "new" or (row.state == "finished" and not self.merge):
                if commit:
                    row.done_group, row.group = row.group, None
                row.start_block()
                row.group = self._open_group()
            on = row.state == "denoising"
            active.append(on)
            row_ids: list[torch.Tensor] = []
            row_segments: list[Segment] = []
            row_groups: list[int] = []
            if commit:
                assert row.pending is not None
                row_ids.append(self._ids(row.pending))
                row_segments.append(Segment(bs))
                row_groups.append(_gid(row.done_group))
                if row.done_group is not None:
                    plans[row.done_group] = self._commit_plan(row.done_group)
            if on:
                row_ids.append(row.ids)
                row_segments.append(Segment(row.length))
                row_groups.append(_gid(row.group))
                if row.group is not None:
                    plans[row.group] = self._plan(row)
            if not row_ids:  # nothing of its own this forward: padding
                row_ids.append(self._ids([opts.mask_id]))
            ids.append(torch.cat(row_ids) if len(row_ids) > 1 else row_ids[0])
            segments.append(row_segments)
            groups.append(row_groups)
        split = bs if any(commits) else None
        layout = Layout([row.past for row in self.rows], segments, split=split, groups=groups)
        checkpoint = self._take()
        self._route(layout, plans)
        logits = self._forward(ids, layout)
        if any(commits):
            mask = torch.tensor(commits)
            checkpoint.commit(bs, mask, self.forward.mid_states())
            self._current = False
            assert self.cache is not None
            self.cache.grow(mask, bs)
        else:
            checkpoint.restore()
        for b, row in enumerate(self.rows):
            offset = 0
            if commits[b]:
                offset = bs
                if opts.logits_shift:
                    row.last_row = logits[b, bs - 1]
                self._after_commit(row)
            if active[b]:
                row.advance(self._aligned(row, logits[b], offset), row.options.confidences)
                if row.state == "done":
                    self._end_groups(row)

    # -- helpers ----------------------------------------------------------------

    def _forward(self, ids: list[torch.Tensor], layout: Layout) -> torch.Tensor:
        """Run the rows' ids [n_b] padded with masks to the longest."""
        width = max(int(row.shape[0]) for row in ids)
        if len(ids) == 1:
            batch = ids[0][None]
        else:
            batch = torch.full(
                (len(ids), width), self.options.mask_id, dtype=torch.long, device=self._device
            )
            for b, row in enumerate(ids):
                batch[b, : row.shape[0]] = row
        assert self.cache is not None
        logits = self.forward(batch, self.cache.cache, layout)
        self.forwards += 1
        return logits

    def _aligned(self, row: Sequence, logits: torch.Tensor, offset: int) -> torch.Tensor:
        """The block's logits [length, V] with row i predicting position i."""
        block = logits[offset : offset + row.length]
        if not self.options.logits_shift:
            return block
        # No earlier forward only when the whole prompt heads the block: its first
        # position is a prompt token then, and its row is never read.
        first = row.last_row if row.last_row is not None else block[0]
        return torch.cat([first[None].to(block.dtype), block[:-1]])

    def _take(self) -> CacheCheckpoint:
        """The checkpoint of the cache as it is now (after a restore it still is)."""
        assert self.cache is not None
        if self._checkpoint is not None and self._current:
            return self._checkpoint
        cache = self.cache.cache
        self._checkpoint = (
            CacheCheckpoint.take(cache)
            if self._checkpoint is None
            else self._checkpoint.retake(cache)
        )
        self._current = True
        return self._checkpoint

    def _after_commit(self, row: Sequence) -> None:
        if self.routing is not None and row.done_group is not None:
            row.stats.experts.append(self.routing.end_group(row.done_group))
        row.done_group = None
        row.after_commit()

    def _open_group(self) -> int | None:
        return self.routing.open_group() if self.routing is not None else None

    def _plan(self, row: Sequence) -> Plan:
        assert self.routing is not None and row.group is not None
        return self.routing.plan(row.group, row.steps, row.filled(), row.free)

    def _commit_plan(self, gid: int) -> Plan:
        assert self.routing is not None
        return self.routing.commit_plan(gid)

    def _route(self, layout: Layout, plans: dict[int, Plan]) -> None:
        if self.routing is None:
            return
        width = layout.width()
        tokens = torch.full((layout.rows, max(width, 1)), -1, dtype=torch.long)
        for b, (segments, groups) in enumerate(zip(layout.segments, layout.groups, strict=True)):
            start = 0
            for segment, gid in zip(segments, groups, strict=True):
                tokens[b, start : start + segment.length] = gid
                start += segment.length
        padded = max(width, 1)
        self.routing.prepare(tokens[:, :padded].reshape(-1).to(self._device), plans)

    def _end_groups(self, row: Sequence) -> None:
        if self.routing is not None:
            for gid in (row.done_group, row.group):
                if gid is not None:
                    counts = self.routing.end_group(gid)
                    if gid == row.done_group or row.steps:
                        row.stats.experts.append(counts)
        row.done_group = row.group = None

    def _ids(self, ids: list[int] | list[list[int]]) -> torch.Tensor:
        return torch.tensor(ids, dtype=torch.long, device=self._device)


def _gid(group: int | None) -> int:
    return -1 if group is None else group
