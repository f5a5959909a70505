"""Which decoder runs a checkpoint: its own block-decoding code, or our loop.

A diffusion checkpoint may ship its decoding in its remote code (Clover's
rebuilt layers do). ``choose_decoder`` looks for that entry point,
``model.diffusion_generate``, and takes it when its signature names a per-step
hook ``generation_tokens_hook_func(step, x, logits) -> x`` (the Dream
convention), which is what lets drafts and committed blocks stream. A
signature that only has ``**kwargs`` is not taken: nothing says the hook or
any of our settings would be honoured.

Our settings reach the entry point only through parameters its signature
names (``ARGUMENTS``); settings it has no parameter for are listed in
``DecoderChoice.not_applied`` and said once at load, never dropped silently.

When our loop cannot drive the checkpoint's forward (``selftest.py``), an
entry point without the hook still serves, without drafts
(``generate_choice``): the whole answer arrives when it is done.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = [
    "ARGUMENTS",
    "ENTRY_POINT",
    "HOOK",
    "DecoderChoice",
    "choose_decoder",
    "generate_choice",
    "parameters",
]

ENTRY_POINT = "diffusion_generate"
HOOK = "generation_tokens_hook_func"

ARGUMENTS: dict[str, tuple[str, ...]] = {
    "threshold": ("threshold", "confidence_threshold"),
    "block_size": ("block_size", "block_length"),
    "stop_strings": ("stop_strings", "stop"),
    "mask_id": ("mask_token_id", "mask_id"),
    "max_new_tokens": ("max_new_tokens",),
    "repetition_penalty": ("repetition_penalty",),
    "presence_penalty": ("presence_penalty",),
    "frequency_penalty": ("frequency_penalty",),
    "end_bias_after": ("end_bias_after",),
    "end_bias_per_1k": ("end_bias_per_1k",),
    "think_bias_after": ("think_bias_after",),
    "think_bias_per_1k": ("think_bias_per_1k",),
    "expert_mass": ("expert_mass",),
}
"""Our setting -> the parameter names an entry point may take it under (first match wins)."""


@dataclass(slots=True, frozen=True)
class DecoderChoice:
    """The decoder chosen at load, why, and what it cannot apply."""

    kind: Literal["checkpoint", "generate", "builtin"]
    """checkpoint: its entry point with the step hook; generate: its entry point without
    drafts; builtin: our loop."""
    reason: str
    takes: dict[str, str] = field(default_factory=dict)
    """Our setting -> the entry point's parameter name, for the settings it takes."""
    not_applied: tuple[str, ...] = ()

    def notice(self) -> str:
        """One sentence for the load notice and ``--verbose``/status."""
        if self.kind == "builtin":
            return f"Decoding with clover-code's block-diffusion loop ({self.reason})."
        drafts = " without drafts" if self.kind == "generate" else ""
        text = f"Decoding with the checkpoint's own {ENTRY_POINT}{drafts} ({self.reason})"
        if self.not_applied:
            text += (
                f"; it has no parameter for {', '.join(self.not_applied)}, so those are not "
                "applied on this path"
            )
        return text + "."


def parameters(model: Any) -> dict[str, inspect.Parameter] | None:
    """The named parameters of ``model.diffusion_generate``, or None when it has none."""
    generate = getattr(model, ENTRY_POINT, None)
    if not callable(generate):
        return None
    try:
        params = inspect.signature(generate).parameters
    except (TypeError, ValueError):
        return None
    return {n: p for n, p in params.items() if p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL)}


def choose_decoder(
    model: Any, setting: str, controls: Any = None, expert_mass: float | None = None
) -> DecoderChoice:
    """The decoder for ``setting`` (auto, checkpoint or builtin) on ``model``.

    Raises ``ValueError`` (one sentence) when ``checkpoint`` is asked for and the
    model has no usable entry point.
    """
    if setting == "builtin":
        return DecoderChoice("builtin", "decoder = builtin")
    params = parameters(model)
    missing: str | None = None
    if params is None:
        missing = f"the checkpoint's remote code has no {ENTRY_POINT}"
    elif HOOK not in params:
        missing = (
            f"the checkpoint's {ENTRY_POINT} names no {HOOK} parameter, so its steps "
            "cannot be streamed"
        )
    if missing is not None:
        if setting == "checkpoint":
            raise ValueError(
                f"decoder = checkpoint, but {missing}; use decoder auto or builtin "
                "(--decoder builtin runs clover-code's own loop)"
            )
        return DecoderChoice("builtin", missing)
    assert params is not None
    why = "decoder = checkpoint" if setting == "checkpoint" else "its remote code ships one"
    return _taking(params, "checkpoint", why, controls, expert_mass)


def generate_choice(
    model: Any, why: str, controls: Any = None, expert_mass: float | None = None
) -> DecoderChoice | None:
    """The checkpoint's entry point run without the step hook (no drafts), or None when it
    has none or names no ``max_new_tokens`` (nothing would bound its answer)."""
    params = parameters(model)
    if params is None or "max_new_tokens" not in params:
        return None
    return _taking(params, "generate", why, controls, expert_mass)


def _taking(
    params: dict[str, inspect.Parameter],
    kind: Literal["checkpoint", "generate"],
    why: str,
    controls: Any,
    expert_mass: float | None,
) -> DecoderChoice:
    takes: dict[str, str] = {}
    not_applied: list[str] = []
    for ours, names in ARGUMENTS.items():
        found = [n for n in names if n in params]
        if found:
            takes[ours] = found[0]
        elif ours == "expert_mass":
            if expert_mass is not None:
                not_applied.append(ours)
        elif _matters(ours, controls):
            not_applied.append(ours)
    return DecoderChoice(kind, why, takes, tuple(not_applied))


def _matters(setting: str, controls: Any) -> bool:
    """Whether a setting the entry point cannot take would have changed decoding.

    Stop strings and the token limit are enforced by clover-code on every path;
    a missing mask id parameter means the entry point knows its own.
    """
    if setting in ("threshold", "block_size"):
        return True
    if controls is None:
        return False
    if setting == "repetition_penalty":
        return bool(controls.repetition_penalty != 1.0)
    if setting in ("presence_penalty", "frequency_penalty"):
        return bool(getattr(controls, setting) != 0.0)
    if setting.startswith("end_bias"):
        return bool(controls.end_bias_per_1k)
    if setting.startswith("think_bias"):
        return bool(controls.think_bias_per_1k)
    return False
