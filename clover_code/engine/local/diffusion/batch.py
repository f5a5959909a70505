"""Several sequences decoded in the same forwards.

N sequences that each denoise one block are one forward of N rows: on a GPU
it costs little more than one row, the expert weights being read once for
all of them. The decoder works in rounds, as SGLang's dLLM scheduler does in
its default mode: in a round every sequence in the batch denoises one block,
each with its own ``LowConfidence`` decisions, stops and budget
(``sequence.py``); a sequence whose block is done waits (its row rides along
as padding) until every block of the round is done. Between rounds finished
sequences leave and new ones join: a new sequence's prompt is prefilled on
its own (its own one-row cache), then joins the batch's cache as a row
(``rows.py``).

A round's first forward carries, for each sequence that finished a block in
the round before, that block (which this forward commits to the cache) and
then its next block, masked: a block costs its denoising steps and no extra
forward. The linear-attention state after the committed block is kept at the
split point (``split.py``); a sequence with nothing to commit (it just
joined) starts its block at the same forward, padded, and keeps its state.
When the model cannot split the state, the commit is a forward of its own.

Any exception from a forward is left to the caller: the batch's state is
then unknown, so the caller drops it (``close``).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable

import torch

from clover_code.engine.local.diffusion.experts import ExpertRouting, Plan
from clover_code.engine.local.diffusion.forward import ModelForward
from clover_code.engine.local.diffusion.layout import Layout, Segment, block_segments
from clover_code.engine.local.diffusion.loop import Block, DecodeOptions, Step, check_prompt
from clover_code.engine.local.diffusion.rows import RowCache
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
        self.cache = RowCache()
        self._checkpoint: CacheCheckpoint | None = None
        self.forwards = 0
        """Forwards run (prefill, steps and commits; each counts once, whatever its rows)."""

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
        """Queue a sequence; it joins at the next round. Raises for a prompt that cannot be
        decoded (empty, over the context window)."""
        opts = options or self.options
        if (opts.block_size, opts.mask_id) != (self.options.block_size, self.options.mask_id):
            raise ValueError("every sequence of a batch needs the same block size and mask id")
        budget = check_prompt(prompt, opts)
        sequence = Sequence(
            list(prompt),
            opts,
            budget,
            sink,
            cancelled,
            self.forward.vocab_size,
            torch.device(getattr(self.forward, "device", "cpu")),
        )
        self.waiting.append(sequence)
        return sequence

    def step(self) -> bool:
        """Run the next forward (a round's first one may also prefill); False when idle."""
        for row in self.rows:
            if row.state in ("denoising", "finished") and row.cancelled():
                self._drop(row)
        if not any(row.state == "denoising" for row in self.rows):
            self._next_round()
        elif self.rows:
            self._denoise()
        return self.busy

    def close(self) -> None:
        """Drop every sequence and the cache (a failed forward, or the end)."""
        for row in self.rows:
            self._end_groups(row)
        self.rows = []
        self.waiting.clear()
        self.cache = RowCache()
        self._checkpoint = None
        if self.routing is not None:
            self.routing.release()

    # -- rounds -------------------------------------------------------------

    def _next_round(self) -> None:
        for row in self.rows:
            if row.state == "done" and row.group is not None:
                self._end_groups(row)
        kept = [i for i, row in enumerate(self.rows) if row.state == "finished"]
        self.rows = [self.rows[i] for i in kept]
        self.cache.keep(kept)
        self._checkpoint = None
        for row in self.rows:
            row.done_group, row.group = row.group, None
        while self.waiting and len(self.rows) < self.max_batch:
            sequence = self.waiting.popleft()
            if sequence.cancelled():
                sequence.state, sequence.finish = "done", "cancelled"
                continue
            sequence.commit_cost = 0 if self.merge else 1
            self.cache.join(self._prefill(sequence), sequence.past)
            self.rows.append(sequence)
        if not self.rows:
            return
        commits = [row.pending is not None for row in self.rows]
        if any(commits) and not self.merge:
            self._commit_alone(commits)
            commits = [False] * len(self.rows)
        for row in self.rows:
            row.start_block()
        self._first_forward(commits)

    def _prefill(self, sequence: Sequence) -> object:
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
            layout = Layout([start], [segments])
            logits = self.forward(self._ids([ids]), cache, layout, keep=1)
            last = logits[0, -1]
            sequence.stats.prefill_forwards += 1
            self.forwards += 1
        sequence.past = aligned
        sequence.last_row = last if opts.logits_shift else None
        return cache

    def _commit_alone(self, commits: list[bool]) -> None:
        """Write the finished blocks with a forward of their own (no state split)."""
        bs = self.options.block_size
        rows = [row for row, c in zip(self.rows, commits, strict=True) if c]
        layout = Layout(
            [row.past for row in self.rows],
            [[Segment(bs)] if c else [] for c in commits],
            self.cache.valid,
            groups=[
                [_gid(row.done_group)] if c else []
                for row, c in zip(self.rows, commits, strict=True)
            ],
        )
        ids = [
            row.pending if row.pending is not None else [self.options.mask_id] * bs
            for row in self.rows
        ]
        checkpoint = self._take()
        plans: dict[int, Plan] = {}
        for row in rows:
            if row.done_group is not None:
                plans[row.done_group] = self._commit_plan(row)
        self._route(layout, plans)
        logits = self._run(ids, layout)
        mask = torch.tensor(commits)
        checkpoint.commit(bs, mask, None)
        self.cache.grow(mask, bs)
        for b, row in enumerate(self.rows):
            if commits[b]:
                row.count_commit()
                if self.options.logits_shift:
                    row.last_row = logits[b, bs - 1]
                self._after_commit(row)

    def _first_forward(self, commits: list[bool]) -> None:
        """A round's first forward: committed blocks (if merged) and every row's new block."""
        opts = self.options
        bs = opts.block_size
        segments: list[list[Segment]] = []
        ids: list[list[int]] = []
        plans: dict[int, Plan] = {}
        groups: list[list[int]] = []
        for row, commit in zip(self.rows, commits, strict=True):
            row.group = self._open_group()
            block = row.ids.tolist()
            if commit:
                assert row.pending is not None
                segments.append([Segment(bs), Segment(len(block))])
                ids.append(row.pending + block)
                groups.append([_gid(row.done_group), _gid(row.group)])
                if row.done_group is not None:
                    plans[row.done_group] = self._commit_plan(row)
            else:
                segments.append([Segment(len(block))])
                ids.append(block)
                groups.append([_gid(row.group)])
            if row.group is not None:
                plans[row.group] = self._plan(row)
        layout = Layout(
            [row.past for row in self.rows],
            segments,
            self.cache.valid,
            split=bs if any(commits) else None,
            groups=groups,
        )
        checkpoint = self._take()
        self._route(layout, plans)
        logits = self._run(ids, layout)
        if any(commits):
            mask = torch.tensor(commits)
            checkpoint.commit(bs, mask, self.forward.mid_states() if self.merge else None)
            self.cache.grow(mask, bs)
        else:
            checkpoint.restore()
        for b, row in enumerate(self.rows):
            offset = bs if commits[b] else 0
            if commits[b]:
                if opts.logits_shift:
                    row.last_row = logits[b, bs - 1]
                self._after_commit(row)
            row.advance(self._aligned(row, logits[b], offset), row.options.confidences)
            self._settle(row)

    def _denoise(self) -> None:
        """A denoising step for every row whose block still has masked positions."""
        opts = self.options
        active = [row.state == "denoising" for row in self.rows]
        ids: list[list[int]] = []
        segments: list[list[Segment]] = []
        groups: list[list[int]] = []
        plans: dict[int, Plan] = {}
        for row, on in zip(self.rows, active, strict=True):
            if on:
                ids.append(row.ids.tolist())
                segments.append([Segment(row.length)])
                groups.append([_gid(row.group)])
                if row.group is not None:
                    plans[row.group] = self._plan(row)
            else:  # rides along as padding
                ids.append([opts.mask_id])
                segments.append([])
                groups.append([])
        layout = Layout([row.past for row in self.rows], segments, self.cache.valid, groups=groups)
        checkpoint = self._take()
        self._route(layout, plans)
        logits = self._run(ids, layout)
        checkpoint.restore()
        for b, row in enumerate(self.rows):
            if active[b]:
                row.advance(self._aligned(row, logits[b], 0), row.options.confidences)
                self._settle(row)

    # -- helpers ------------------------------------------------------------

    def _run(self, ids: list[list[int]], layout: Layout) -> torch.Tensor:
        width = max(len(row) for row in ids)
        padded = [row + [self.options.mask_id] * (width - len(row)) for row in ids]
        logits = self.forward(self._ids(padded), self.cache.cache, layout)
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
        cache = self.cache.cache
        self._checkpoint = (
            CacheCheckpoint.take(cache)
            if self._checkpoint is None
            else self._checkpoint.retake(cache)
        )
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

    def _commit_plan(self, row: Sequence) -> Plan:
        assert self.routing is not None and row.done_group is not None
        return self.routing.commit_plan(row.done_group)

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
        device = torch.device(getattr(self.forward, "device", "cpu"))
        self.routing.prepare(tokens[:, :width].reshape(-1).to(device), plans)

    def _end_groups(self, row: Sequence) -> None:
        if self.routing is None:
            return
        for gid in (row.done_group, row.group):
            if gid is not None:
                counts = self.routing.end_group(gid)
                if gid == row.done_group or row.steps:
                    row.stats.experts.append(counts)
        row.done_group = row.group = None

    def _settle(self, row: Sequence) -> None:
        """A row that is done stops counting experts now (its usage is reported at once)."""
        if row.state == "done":
            self._end_groups(row)

    def _drop(self, row: Sequence) -> None:
        row.state = "done"
        row.finish = "cancelled"

    def _ids(self, ids: list[list[int]]) -> torch.Tensor:
        device = torch.device(getattr(self.forward, "device", "cpu"))
        return torch.tensor(ids, dtype=torch.long, device=device)


def _gid(group: int | None) -> int:
    return -1 if group is None else group
