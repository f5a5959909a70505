"""Using a checkpoint's own diffusion generate when its remote code has a step hook.

Some diffusion checkpoints ship ``model.diffusion_generate(...)`` in their
remote code with a per-step hook, ``generation_tokens_hook_func(step, x,
logits) -> x`` (the Dream convention), where ``x`` is the whole sequence with
undecided positions holding the mask token. When a loaded model offers that,
``HookedGenerate`` runs it and turns what the hook sees into the loop's
``Step`` and ``Block`` results: a ``Step`` for the first block that still has
masked positions, and a ``Block`` for every block whose positions are all
decided. A stop token ends the response (the hook aborts the model's loop).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import torch

from clover_code.engine.diffusion.loop import Block, DecodeOptions, DecodeStats, Step, check_prompt

__all__ = ["HookedGenerate", "has_step_hook"]

HOOK = "generation_tokens_hook_func"


def has_step_hook(model: Any) -> bool:
    """True when ``model.diffusion_generate`` takes a per-step hook."""
    generate = getattr(model, "diffusion_generate", None)
    if not callable(generate):
        return False
    try:
        params = inspect.signature(generate).parameters
    except (TypeError, ValueError):
        return False
    return HOOK in params or any(p.kind is p.VAR_KEYWORD for p in params.values())


class _Abort(Exception):
    """Raised from the hook to end the model's loop (stop token, cancellation)."""


class HookedGenerate:
    """Runs ``model.diffusion_generate`` and reports its steps as ``Step``/``Block``."""

    def __init__(self, model: Any, options: DecodeOptions) -> None:
        self.model = model
        self.options = options
        self.stats = DecodeStats()

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
        try:
            out = self.model.diffusion_generate(
                input_ids, max_new_tokens=budget, **{HOOK: hook}, return_dict_in_generate=True
            )
        except _Abort:
            return
        if not state["done"]:
            # The hook saw less than the whole answer: take the rest from the result.
            sequences = getattr(out, "sequences", out)
            hook(-1, sequences.reshape(1, -1), None)
