"""Running a checkpoint's own ``diffusion_generate`` (chosen in ``entry_point.py``).

The entry point takes a per-step hook, ``generation_tokens_hook_func(step, x,
logits) -> x`` (the Dream convention), where ``x`` is the whole sequence with
undecided positions holding the mask token. ``HookedGenerate`` calls it with
our threshold, block size, stop strings, mask id, token budget and controls
under the parameter names its signature has (``DecoderChoice.takes``), and
turns what the hook sees into the loop's ``Step`` and ``Block`` results: a
``Step`` for the first block that still has masked positions, and a ``Block``
for every block whose positions are all decided. A stop token ends the
response (the hook aborts the model's loop).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch

from clover_code.engine.local.diffusion.entry_point import HOOK, DecoderChoice
from clover_code.engine.local.diffusion.loop import (
    Block,
    DecodeOptions,
    DecodeStats,
    Step,
    check_prompt,
)

__all__ = ["HookedGenerate", "entry_arguments"]


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


class HookedGenerate:
    """Runs ``model.diffusion_generate`` and reports its steps as ``Step``/``Block``."""

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

    def run(
        self,
        prompt: list[int],
        on_item: Callable[[Step | Block], None],
        cancelled: Callable[[], bool],
    ) -> None:
        """Generate, calling ``on_item`` for every step and committed block."""
        opts = self.options
        budget = check_prompt(prompt, opts)
        start, bs = len(prompt), opts.block_size
        state = {"committed": 0, "block": 0, "step": 0, "done": False}
        stops = set(opts.stop_ids)

        def hook(step: int | None, x: torch.Tensor, logits: Any) -> torch.Tensor:
            if step is None or state["done"]:
                return x
            if cancelled():
                raise _Abort
            self.stats.step_forwards += 1
            gen = x[0, start : start + budget].tolist()
            while state["committed"] < len(gen):
                lo = state["committed"]
                ids = gen[lo : lo + bs]
                if opts.mask_id in ids:
                    break
                stop = next((i for i, t in enumerate(ids) if t in stops), None)
                finish = "stop" if stop is not None else None
                ids = ids[:stop] if stop is not None else ids
                if finish is None and lo + len(ids) >= budget:
                    finish = "length"
                state["step"] += 1
                on_item(Block(state["block"], ids, state["step"], finish))  # type: ignore[arg-type]
                self.stats.tokens += len(ids)
                state["committed"] = lo + bs
                state["block"] += 1
                state["step"] = 0
                if finish is not None:
                    state["done"] = True
                    raise _Abort
            else:
                return x
            state["step"] += 1
            ids = gen[state["committed"] : state["committed"] + bs]
            masked = [t == opts.mask_id for t in ids]
            on_item(Step(state["block"], state["step"], ids, masked, None))
            return x

        input_ids = torch.tensor([prompt], device=getattr(self.model, "device", None))
        self.arguments = entry_arguments(
            self.choice, opts, budget, self.stop_strings, self.expert_mass
        )
        try:
            out = self.model.diffusion_generate(input_ids, **self.arguments, **{HOOK: hook})
        except _Abort:
            return
        if not state["done"]:
            # The hook saw less than the whole answer: take the rest from the result.
            sequences = getattr(out, "sequences", out)
            hook(-1, sequences.reshape(1, -1), None)
