"""Running a checkpoint's own ``diffusion_generate`` (chosen in ``entry_point.py``).

The entry point takes a per-step hook, ``generation_tokens_hook_func(step, x,
logits) -> x`` (the Dream convention), where ``x`` is the whole sequence with
undecided positions holding the mask token. ``HookedGenerate`` calls it with
our threshold, block size, stop strings, mask id, token budget and controls
under the parameter names its signature has (``DecoderChoice.takes``), and
turns what the hook sees into the loop's ``Step`` and ``Block`` results.

Blocks are reported as SGLang and our loop cut them, aligned to absolute
positions (the first one is what is left of the prompt's last block). Every
hook call is one forward, counted for the first block that still had masked
positions before it: a ``Step`` for that block, and when the call leaves it
complete, a ``Block`` with the forwards it took (a later block the same call
completed too costs no forward of its own). A stop token ends the
response as soon as every position before it is filled, whether or not the
rest of its block is (the hook then aborts the model's loop).

``PlainGenerate`` runs an entry point that has no hook (or one chosen because
our loop cannot drive the model): no drafts, the whole answer cut into
blocks when it is done.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch

from clover_code.engine.local.diffusion.entry_point import HOOK, DecoderChoice
from clover_code.engine.local.diffusion.options import (
    Block,
    BlockFinish,
    DecodeOptions,
    DecodeStats,
    Step,
    check_prompt,
)

__all__ = ["HookedGenerate", "PlainGenerate", "entry_arguments"]


def entry_arguments(
    choice: DecoderChoice,
    options: DecodeOptions,
    budget: int,
    stop_strings: Sequence[str],
    expert_mass: float | None = None,
) -> dict[str, Any]:
    """The keyword arguments for the entry point: our settings under its names."""
    values: dict[str, Any] = {
        "threshold": options.threshold,
        "block_size": options.block_size,
        "mask_id": options.mask_id,
        "max_new_tokens": budget,
    }
    if stop_strings:
        values["stop_strings"] = list(stop_strings)
    if expert_mass is not None:
        values["expert_mass"] = expert_mass
    for name in choice.takes:
        if hasattr(options.controls, name):
            values[name] = getattr(options.controls, name)
    return {choice.takes[k]: v for k, v in values.items() if k in choice.takes}


class _Abort(Exception):
    """Raised from the hook to end the model's loop (stop token, cancellation)."""


@dataclass(slots=True)
class _Cutter:
    """Cuts the generated part of ``x`` into aligned blocks and reports them."""

    start: int
    budget: int
    options: DecodeOptions
    on_item: Callable[[Step | Block], None]
    stats: DecodeStats
    committed: int = 0
    """Generated positions already reported in a ``Block``."""
    block: int = 0
    steps: int = 0
    """Forwards counted for the current block."""
    counted: bool = True
    """False: the forwards are unknown (an entry point without a hook)."""
    done: bool = False

    def bounds(self) -> tuple[int, int]:
        """The current block, as generated-token offsets [lo, hi)."""
        bs = self.options.block_size
        absolute = self.start + self.committed
        end = (absolute // bs + 1) * bs - self.start
        return self.committed, min(end, self.budget)

    def commit_ready(self, gen: list[int], final: bool = False) -> None:
        """Report every block that is complete (or ended by a stop token) in ``gen``;
        ``final``: ``gen`` is the whole answer (shorter than the budget if it ended)."""
        mask = self.options.mask_id
        stops = self.options.stop_ids
        end = min(self.budget, len(gen)) if final else self.budget
        while not self.done and self.committed < end:
            lo, hi = self.bounds()
            hi = min(hi, end)
            ids = gen[lo:hi]
            masked = [t == mask for t in ids]
            stop = _stop(ids, masked, stops)
            if stop is None and any(masked):
                return
            finish: BlockFinish | None = None
            if stop is not None:
                ids, finish = ids[:stop], "stop"
            elif hi >= self.budget:
                finish = "length"
            elif hi >= end:
                finish = "stop"  # the answer ended here
            self.on_item(Block(self.block, ids, self.steps if self.counted else None, finish))
            self.stats.tokens += len(ids)
            self.committed = hi
            self.block += 1
            self.steps = 0
            if finish is not None:
                self.done = True


class _EntryPoint:
    """What both ways of calling ``model.diffusion_generate`` hold."""

    def __init__(
        self,
        model: Any,
        options: DecodeOptions,
        choice: DecoderChoice,
        stop_strings: Sequence[str] = (),
        expert_mass: float | None = None,
    ) -> None:
        self.model = model
        self.options = options
        self.choice = choice
        self.stop_strings = tuple(stop_strings)
        self.expert_mass = expert_mass
        self.stats = DecodeStats()
        self.arguments: dict[str, Any] = {}
        """The keyword arguments of the latest call (tests and ``--verbose`` read them)."""


class HookedGenerate(_EntryPoint):
    """Runs ``model.diffusion_generate`` and reports its steps as ``Step``/``Block``."""

    def run(
        self,
        prompt: list[int],
        on_item: Callable[[Step | Block], None],
        cancelled: Callable[[], bool],
    ) -> None:
        """Generate, calling ``on_item`` for every step and finished block."""
        opts = self.options
        budget = check_prompt(prompt, opts)
        start = len(prompt)
        self.stats = DecodeStats()
        cutter = _Cutter(start, budget, opts, on_item, self.stats)

        def hook(step: int | None, x: torch.Tensor, logits: Any) -> torch.Tensor:
            if step is None or cutter.done:
                return x
            if cancelled():
                raise _Abort
            self.stats.step_forwards += 1
            cutter.steps += 1
            gen = x[0, start : start + budget].tolist()
            lo, hi = cutter.bounds()
            ids = gen[lo:hi]
            on_item(Step(cutter.block, cutter.steps, ids, [t == opts.mask_id for t in ids], None))
            cutter.commit_ready(gen)
            if cutter.done:
                raise _Abort
            return x

        self.arguments = entry_arguments(
            self.choice, opts, budget, self.stop_strings, self.expert_mass
        )
        try:
            out = self.model.diffusion_generate(
                _input(self.model, prompt), **self.arguments, **{HOOK: hook}
            )
        except _Abort:
            return
        if not cutter.done:
            # The hook saw less than the whole answer: the rest, without steps.
            cutter.steps = 0
            cutter.commit_ready(_generated(out, start, budget), final=True)


class PlainGenerate(_EntryPoint):
    """Runs ``model.diffusion_generate`` without a hook: no drafts, blocks at the end."""

    def run(
        self,
        prompt: list[int],
        on_item: Callable[[Step | Block], None],
        cancelled: Callable[[], bool],
    ) -> None:
        """Generate the whole answer, then report it block by block (steps unknown)."""
        opts = self.options
        budget = check_prompt(prompt, opts)
        self.stats = DecodeStats()
        self.arguments = entry_arguments(
            self.choice, opts, budget, self.stop_strings, self.expert_mass
        )
        out = self.model.diffusion_generate(_input(self.model, prompt), **self.arguments)
        if cancelled():
            return
        cutter = _Cutter(len(prompt), budget, opts, on_item, self.stats, counted=False)
        cutter.commit_ready(_generated(out, len(prompt), budget), final=True)


def _input(model: Any, prompt: list[int]) -> torch.Tensor:
    return torch.tensor([prompt], device=getattr(model, "device", None))


def _generated(out: Any, start: int, budget: int) -> list[int]:
    """The generated ids of an entry point's result (at most ``budget``)."""
    sequences = getattr(out, "sequences", out)
    ids: list[int] = sequences.reshape(-1)[start : start + budget].tolist()
    return ids


def _stop(ids: list[int], masked: list[bool], stops: frozenset[int]) -> int | None:
    for i, token in enumerate(ids):
        if masked[i]:
            return None
        if token in stops:
            return i
    return None
