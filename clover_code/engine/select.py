"""Choose and build the engine the settings ask for. Never a silent fake."""

from __future__ import annotations

import asyncio
import importlib.util
from collections.abc import Callable
from dataclasses import fields
from typing import TYPE_CHECKING

from clover_code.config.settings import Settings
from clover_code.engine.base import CONTROL_KEYS, Backend
from clover_code.errors import EngineUnavailable, missing_extra

if TYPE_CHECKING:
    from clover_code.engine.local.hf import HFOptions
    from clover_code.engine.remote.backend import OpenAIBackend

LOCAL_ONLY = (
    "end_bias_after",
    "end_bias_per_1k",
    "think_bias_after",
    "think_bias_per_1k",
    "expert_mass",
)
"""Decoding settings only a local engine applies (named when set for a remote one)."""

NO_ENGINE_HELP = (
    "No model engine is configured: pass --base-url with the /v1 address of an "
    "OpenAI-compatible server (for example http://localhost:30000/v1 for SGLang started with "
    "`--tool-call-parser qwen3_coder --reasoning-parser qwen3`, http://localhost:8080/v1 "
    "for llama.cpp's llama-server, or a hosted endpoint with --api-key), or on a CUDA "
    "machine --engine sglang --model-path <checkpoint> to run Clover in-process."
)


def _resolved_engine(settings: Settings) -> str | None:
    """The engine ``auto`` stands for here (None: none can be chosen)."""
    if settings.engine != "auto":
        return settings.engine
    if settings.base_url:
        return "remote"
    if settings.model_path and _sglang_usable():
        return "sglang"
    return None


def _untrusted_address(settings: Settings) -> str:
    """A clause for the no-engine sentence when the project's own server address was
    ignored for want of trust (it would get the code and the user's API key)."""
    report = settings.project_trust
    if report is None:
        return ""
    ignored = [
        f"{f.path} sets {item}"
        for f in report.untrusted()
        for item in f.loosening
        if item.startswith("base_url ")
    ]
    if not ignored:
        return ""
    return (
        f"; {ignored[0]}, ignored until you trust that file (review it, then run once "
        "with --trust-project)"
    )


def _one_sentence(text: str, clause: str) -> str:
    """``text`` (one sentence) with ``clause`` added before its full stop."""
    return text.removesuffix(".") + clause + "."


def is_local(settings: Settings) -> bool:
    """Whether the settings choose a local engine (a checkpoint loaded in this process)."""
    return _resolved_engine(settings) in ("hf", "sglang")


def build_backend(settings: Settings) -> Backend:
    """The backend for ``settings.engine``, or ``EngineUnavailable`` saying what to do."""
    engine = _resolved_engine(settings)
    if engine is None:
        raise EngineUnavailable(_one_sentence(NO_ENGINE_HELP, _untrusted_address(settings)))
    if engine == "remote":
        return remote_backend(settings)
    if not settings.model_path:
        raise EngineUnavailable(
            f"--engine {engine} needs a local checkpoint: pass --model-path DIR "
            "(or set CLOVER_MODEL_PATH)."
        )
    if engine == "hf":
        try:
            from clover_code.engine.local.hf import HFBackend

            options = hf_options(settings)
        except ModuleNotFoundError as exc:
            raise missing_extra(exc, "--engine hf") from None
        return HFBackend(settings.model_path, options)
    if engine == "sglang":
        from clover_code.engine.local.sglang import SGLangBackend, SGLangOptions

        return SGLangBackend(
            settings.model_path,
            SGLangOptions(
                block_size=settings.block_size,
                threshold=settings.threshold,
                tp_size=settings.tp_size,
                mem_fraction_static=settings.mem_fraction_static,
                quantization=settings.quantization,
                max_tokens=settings.max_tokens or 8192,
                context_window=settings.context_window,
                expert_mass=settings.expert_mass,
                remask_below=settings.remask_below,
            ),
        )
    raise EngineUnavailable(f"unknown engine '{engine}'; use auto, remote, sglang or hf.")


def remote_backend(settings: Settings) -> OpenAIBackend:
    """The OpenAI-compatible server's backend the settings describe (not yet checked);
    a ``model`` named in ``[models]`` asks for its id, with its window and parsing."""
    if settings.model:
        settings = settings.for_model(settings.model)
    if not settings.base_url:
        raise EngineUnavailable(
            _one_sentence(
                "--engine remote needs a server address: pass --base-url URL "
                "(or set CLOVER_BASE_URL).",
                _untrusted_address(settings),
            )
        )
    from clover_code.engine.remote.backend import OpenAIBackend

    return OpenAIBackend(
        settings.base_url,
        settings.model,
        api_key=settings.api_key.get_secret_value() if settings.api_key else None,
        block_size=settings.block_size,
        raw_parsing=settings.raw_parsing,
        max_retries=settings.max_retries,
        read_timeout=settings.request_timeout,
        drafts=settings.remote_drafts,
        context_window=settings.context_window,
        controls={k: float(v) for k in CONTROL_KEYS if (v := getattr(settings, k)) is not None},
        local_only=tuple(k for k in LOCAL_ONLY if getattr(settings, k) is not None),
        remask=(settings.remask_below, settings.remask_rounds) if settings.remask_below else None,
    )


def hf_options(settings: Settings) -> HFOptions:
    """The hf engine's options from the settings (explicit decoding controls included)."""
    from clover_code.engine.local.diffusion.controls import Controls
    from clover_code.engine.local.hf import HFOptions

    names = [f.name for f in fields(Controls) if hasattr(settings, f.name)]
    explicit = {n: getattr(settings, n) for n in names if getattr(settings, n) is not None}
    return HFOptions(
        block_size=settings.block_size,
        threshold=settings.threshold,
        dtype=settings.dtype,
        device=settings.device,
        max_tokens=settings.max_tokens or 8192,
        context_window=settings.context_window,
        control_overrides=explicit,
        confidences=settings.draft_confidences,
        decoder=settings.decoder,
        logits_shift=settings.logits_shift,
        expert_mass=settings.expert_mass,
        expert_select=settings.expert_select,
        prefill=settings.prefill,
        max_batch=settings.max_batch,
        remask_below=settings.remask_below,
        remask_rounds=settings.remask_rounds,
    )


async def open_backend(settings: Settings, notice: Callable[[str], None] | None = None) -> Backend:
    """Build the backend and check it can serve the model; released again on failure.

    A local checkpoint takes minutes to load: ``notice`` hears so first, and the
    hf engine loads in a worker thread so the caller's event loop (the app, an
    ACP connection) keeps running. SGLang's engine starts on this thread (it
    installs signal handlers, which only the main thread may do), after a
    moment for the notice to be drawn.
    """
    engine = _resolved_engine(settings)
    if engine in ("hf", "sglang") and settings.model_path:
        if notice is not None:
            notice(
                f"Loading {settings.model_path} with the {engine} engine; a large "
                "checkpoint takes a few minutes."
            )
        if engine == "hf":
            from clover_code.engine.local.worker import in_daemon_thread

            backend = await in_daemon_thread(lambda: build_backend(settings))
        else:
            await asyncio.sleep(0.2)
            backend = build_backend(settings)
    else:
        backend = build_backend(settings)
    try:
        await backend.check()
    except BaseException:
        await backend.aclose()
        raise
    if notice is not None:
        for line in backend.notices:
            notice(line)
    return backend


def _sglang_usable() -> bool:
    """True when SGLang is installed and a CUDA GPU is visible (checked without importing torch)."""
    if importlib.util.find_spec("sglang") is None:
        return False
    import shutil

    return shutil.which("nvidia-smi") is not None
