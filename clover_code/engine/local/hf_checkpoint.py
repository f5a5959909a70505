"""Loading a checkpoint for the hf engine, and what it takes to decode it.

``load_checkpoint`` loads the model and its tokenizer (quietly: the terminal
belongs to the app) onto the device; the rest reads what the checkpoint says
about itself: its mask token, whether its logits are shifted by one, its MoE
routers, its decoding controls and the decoder that can drive it. A failed
load becomes one ``EngineUnavailable`` sentence. torch and transformers are
imported only when a checkpoint is loaded.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

from clover_code.errors import EngineError, EngineUnavailable, missing_extra

__all__ = [
    "checkpoint_controls",
    "expert_routing",
    "find_mask_id",
    "is_oom",
    "load_checkpoint",
    "load_error",
    "logits_shift",
    "pick_decoder",
]

SHIFT_KEY = "logits_shift"
"""The config.json key a checkpoint states its alignment with: "none" (position i
predicts token i) or "one" (position i predicts token i + 1); true/false and 1/0
are read the same way."""


def find_mask_id(config: Any, tokenizer: Any) -> int | None:
    """The mask token id from the config (any common key) or the tokenizer."""
    for key in ("mask_token_id", "mask_id", "dllm_mask_id"):
        value = getattr(config, key, None)
        if isinstance(value, int):
            return value
    value = getattr(tokenizer, "mask_token_id", None)
    return value if isinstance(value, int) else None


def logits_shift(config: Any, setting: str) -> bool:
    """Whether logits are shifted by one: the setting, else the checkpoint's config."""
    if setting in ("none", "one"):
        return setting == "one"
    value = getattr(config, SHIFT_KEY, None)
    if isinstance(value, str):
        return value.strip().lower() in ("one", "1", "true")
    return bool(value) if isinstance(value, bool | int) else False


def pick_decoder(
    model: Any, controls: Any, mask_id: int, path: Path, *, decoder: str, expert_mass: float | None
) -> Any:
    """The decoder for the ``decoder`` setting; the builtin loop only on a forward it
    understands."""
    from clover_code.engine.local.diffusion.entry_point import choose_decoder, generate_choice
    from clover_code.engine.local.diffusion.selftest import forward_problem, is_stock

    try:
        choice = choose_decoder(model, decoder, controls, expert_mass)
    except ValueError as exc:
        raise EngineUnavailable(f"{exc} ({path})") from None
    if choice.kind != "builtin" or is_stock(model):
        return choice
    problem = forward_problem(model, mask_id)
    if problem is None:
        return choice
    why = f"clover-code's loop cannot drive this model: {problem}"
    fallback = generate_choice(model, why, controls, expert_mass)
    if fallback is not None and decoder != "builtin":
        return fallback
    raise EngineUnavailable(
        f"clover-code cannot decode the checkpoint at {path}: its remote-code model is not a "
        f"stock transformers class and {problem}, and it ships no diffusion_generate with a "
        "max_new_tokens parameter to decode with instead"
        if fallback is None
        else f"decoder = builtin, but {problem} ({path}); use decoder auto to run the "
        "checkpoint's own diffusion_generate"
    )


def load_checkpoint(
    path: Path, *, device: str, dtype: str, trust_remote_code: bool
) -> tuple[Any, Any]:
    """The model (in eval mode, on ``device``) and tokenizer of the checkpoint at ``path``."""
    if not (path / "config.json").is_file():
        raise EngineUnavailable(
            f"{path} is not a Hugging Face checkpoint (no config.json there); pass the "
            "directory that holds config.json, the weights and the tokenizer with --model-path"
        )
    try:
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer
    except ImportError as exc:
        raise missing_extra(exc, "the hf engine") from None
    # The terminal belongs to the app: no progress bars or library warnings on
    # stderr (the kernel fallback notes are in docs/local-engines.md).
    from transformers.utils import logging as hf_logging

    quiet: Any = hf_logging
    quiet.set_verbosity_error()
    quiet.disable_progress_bar()
    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    torch_dtype: Any = "auto" if dtype == "auto" else getattr(torch, dtype)
    try:
        tokenizer = AutoTokenizer.from_pretrained(path, trust_remote_code=trust_remote_code)
        # With accelerate, weights load straight onto the GPU (no host copy of
        # ~69 GB first); without it transformers refuses device_map.
        direct = device != "cpu" and importlib.util.find_spec("accelerate") is not None
        placement: dict[str, Any] = {"device_map": device} if direct else {}
        model: Any = AutoModelForCausalLM.from_pretrained(
            path, dtype=torch_dtype, trust_remote_code=trust_remote_code, **placement
        )
        if not direct:
            model = model.to(device)
    except Exception as exc:
        raise load_error(path, exc) from None
    model.eval()
    return model, tokenizer


def expert_routing(model: Any, path: Path, *, mass: float | None, select: str) -> Any:
    """Hooks on the model's MoE routers (None: it has none); selection when ``mass`` is set."""
    from clover_code.engine.local.diffusion.experts import ExpertRouting, find_routers

    routers = find_routers(model)
    if not routers:
        if mass is not None:
            raise EngineUnavailable(
                f"expert selection (expert_mass) needs MoE router modules and the model at "
                f"{path} has none that clover-code can hook; unset expert_mass"
            )
        return None
    return ExpertRouting(routers, mass, select)  # type: ignore[arg-type]


def checkpoint_controls(path: Path, overrides: dict[str, float | int]) -> Any:
    """The decoding ``Controls``: ours, then the checkpoint's, then ``overrides``."""
    from clover_code.engine.local.diffusion.controls import Controls

    return Controls.for_checkpoint(path, overrides)


def load_error(path: Path, exc: Exception) -> EngineError:
    """What loading the checkpoint at ``path`` failing with ``exc`` says to the user."""
    if is_oom(exc):
        return EngineUnavailable(
            f"the checkpoint at {path} does not fit in GPU memory; use a quantized build, "
            "free the GPU, or serve it with SGLang across more GPUs (--tp-size)"
        )
    detail = " ".join(str(exc).split())[:300] or type(exc).__name__
    return EngineUnavailable(
        f"loading the checkpoint at {path} failed ({type(exc).__name__}: {detail}); "
        "check that it is a complete transformers checkpoint and that its remote code "
        "matches your transformers version"
    )


def is_oom(exc: BaseException) -> bool:
    """Whether ``exc`` is the accelerator running out of memory."""
    return type(exc).__name__ == "OutOfMemoryError" or "out of memory" in str(exc).lower()
