"""The local Hugging Face backend: block diffusion on a transformers checkpoint.

Loads ``AutoModelForCausalLM.from_pretrained(path, trust_remote_code=True)``
with the checkpoint's tokenizer and chat template, and decodes with the
block-diffusion loop (``engine/local/diffusion``), streaming a ``BlockDraft`` per
denoising step and a ``BlockCommitted`` per block. Responses that run at the
same time (parallel subagents, several sessions, concurrent ``serve``
requests) are decoded together, up to ``max_batch`` per forward
(``batching.py``). torch and transformers are imported only when this
backend is built (the ``local`` extra).
"""

from __future__ import annotations

import asyncio
import importlib.util
from collections.abc import AsyncGenerator, Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from clover_code.engine.base import ChatRequest, EngineWarning
from clover_code.engine.events import EngineEvent, Failed, Finished
from clover_code.engine.local.hf_output import BatchedResponse, ResponseOutput
from clover_code.errors import EngineError, EngineUnavailable, missing_extra

__all__ = ["HFBackend", "HFOptions", "find_mask_id", "logits_shift"]

CLOSE_WAIT_S = 10.0
"""How long closing waits for the decoding thread to finish its step."""

SHIFT_KEY = "logits_shift"
"""The config.json key a checkpoint states its alignment with: "none" (position i
predicts token i) or "one" (position i predicts token i + 1); true/false and 1/0
are read the same way."""


@dataclass(slots=True)
class HFOptions:
    """How to load and decode a checkpoint."""

    block_size: int = 32
    threshold: float = 0.95
    dtype: str = "auto"
    device: str = "auto"
    max_tokens: int = 8192
    context_window: int = 131_072
    controls: Any = None
    """A ``diffusion.Controls`` used as is; None: ours, then the checkpoint's, then
    ``control_overrides`` (see ``Controls.for_checkpoint``)."""
    control_overrides: dict[str, float | int] = field(default_factory=dict)
    confidences: bool = False
    drafts: bool = True
    trust_remote_code: bool = True
    stop_strings: Sequence[str] = field(default_factory=tuple)
    logits_shift: str = "auto"
    """none: the logits at position i predict token i; one: token i + 1; auto: the
    checkpoint's config.json ``logits_shift`` key ("none" or "one"), else none."""
    expert_mass: float | None = None
    """Block-level expert selection: keep the experts holding this share of a block's
    routing mass (0.9 on the model card); None: off."""
    expert_select: str = "block"
    """When a block's kept experts are chosen (``diffusion/experts.py``)."""
    decoder: str = "auto"
    """auto: the checkpoint's own block-decoding entry point when it ships one, else
    our loop; checkpoint: that entry point or an error; builtin: our loop."""
    prefill: str = "block"
    """block: the prompt's whole blocks encoded with bidirectional attention inside each
    (SGLang's dLLM extend mode); causal: left to right."""
    max_batch: int = 8
    """Responses decoded together in one forward."""
    remask_below: float = 0.0
    """Re-denoise a finished block's positions filled below this confidence (0: off)."""
    remask_rounds: int = 1
    """Re-denoising rounds a block may take, at most."""


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


class HFBackend:
    """A ``Backend`` that decodes a local checkpoint with the block-diffusion loop."""

    name = "hf"

    def __init__(self, model_path: str, options: HFOptions | None = None) -> None:
        self.options = options or HFOptions()
        self.block_size = self.options.block_size
        self.model = Path(model_path).name or model_path
        self.path = Path(model_path).expanduser()
        self._model, self.tokenizer = _load(self.path, self.options)
        mask_id = find_mask_id(self._model.config, self.tokenizer)
        if mask_id is None:
            raise EngineUnavailable(
                f"the checkpoint at {self.path} has no mask token (no mask_token_id in "
                "config.json and no mask_token in the tokenizer); block diffusion needs a "
                "diffusion checkpoint such as Clover"
            )
        self.mask_id = mask_id
        self.controls = self.options.controls or _controls(self.path, self.options)
        self.decoder = _decoder(self._model, self.options, self.controls, mask_id, self.path)
        self.notices: list[str] = [self.decoder.notice()]
        """Said once at load (the app's notice, serve's log) and by ``status()``."""
        self.routing = _routing(self._model, self.options, self.path)
        """Hooks on the MoE routers: experts counted per block, selection when asked."""
        self.logits_shift = logits_shift(self._model.config, self.options.logits_shift)
        if self.logits_shift and self.decoder.kind == "builtin":
            source = "setting" if self.options.logits_shift == "one" else "checkpoint's config"
            self.notices.append(
                "Logits are read shifted by one (position i predicts token i + 1), as the "
                f"{source} says."
            )
        if self.options.remask_below > 0 and self.decoder.kind != "builtin":
            self.notices.append(
                EngineWarning(
                    "Re-denoising (remask_below) is off: the checkpoint's own entry point "
                    "decodes this model, and only clover-code's loop re-denoises."
                )
            )
        self._forward: Any = None
        if self.decoder.kind == "builtin":
            from clover_code.engine.local.diffusion.forward import HFForward

            self._forward = HFForward(self._model)
            if not self._forward.splits:
                self.notices.append(
                    "The model's linear-attention layers cannot be split at a block boundary, "
                    "so each finished block is committed with a forward of its own."
                )
        self._serial = asyncio.Lock()
        self._batch: Any = None
        self.failure: EngineError | None = None
        """The error the last failed response ended with."""
        self._pieces: dict[int, str] = {}
        self.last_stats: Any = None
        """``DecodeStats`` of the latest response (forwards, tokens per forward)."""

    async def check(self) -> None:
        """The model is loaded at construction; nothing left to check."""

    def status(self) -> list[str]:
        """What this engine does with the checkpoint: the decoder and why, and the rest."""
        return list(self.notices)

    @property
    def busy(self) -> bool:
        """Whether a response is being decoded (or waits for a place)."""
        running = self._batch.running if self._batch is not None else 0
        return bool(running) or self._serial.locked()

    async def aclose(self) -> None:
        """Stop the decoding thread, drop the model and free accelerator memory."""
        if self._batch is not None:
            thread = self._batch.close()
            self._batch = None
            if thread is not None:
                # Its jobs' consumers are gone, so it leaves at its next step: the model
                # is not dropped (nor the process left) under a forward still running.
                await asyncio.to_thread(thread.join, CLOSE_WAIT_S)
        self._model = None
        self._forward = None
        _free_memory()

    async def stream(self, request: ChatRequest) -> AsyncGenerator[EngineEvent, None]:
        """Stream one response; engine trouble becomes ``Failed`` + ``Finished``."""
        output_begun = False
        try:
            if self._model is None:
                raise EngineUnavailable("the model was unloaded; restart clover-code")
            if self.decoder.kind == "builtin":
                events = self._batched().stream(BatchedResponse(self, request))
            else:
                events = self._serial_stream(request)
            async for event in events:
                output_begun = True
                yield event
        except EngineError as exc:
            self.failure = exc
            yield Failed(exc, partial=output_begun)
            yield Finished("interrupted" if output_begun else "error")
        except Exception as exc:
            self.failure = _engine_error(exc)
            yield Failed(self.failure, partial=output_begun)
            yield Finished("interrupted" if output_begun else "error")

    def _batched(self) -> Any:
        from clover_code.engine.local.batching import BatchScheduler

        if self._batch is None:
            self._batch = BatchScheduler(self._make_decoder, _free_memory)
        return self._batch

    def _make_decoder(self) -> Any:
        from clover_code.engine.local.diffusion.batch import BatchDecoder

        options = self.decode_options(ChatRequest([]))
        return BatchDecoder(self._forward, options, self.routing, self.options.max_batch)

    async def _serial_stream(self, request: ChatRequest) -> AsyncGenerator[EngineEvent, None]:
        """The checkpoint's own entry point: one response at a time."""
        from clover_code.engine.local.worker import stream_from_thread

        async with self._serial:
            async for event in stream_from_thread(self._producer(request)):
                yield event

    def _producer(
        self, request: ChatRequest
    ) -> Callable[[Callable[[list[EngineEvent]], None], Callable[[], bool]], None]:
        def produce(
            emit: Callable[[list[EngineEvent]], None], cancelled: Callable[[], bool]
        ) -> None:
            from clover_code.engine.local.diffusion.remote_generate import (
                HookedGenerate,
                PlainGenerate,
            )

            if self._model is None:
                raise EngineUnavailable("the model was unloaded; restart clover-code")
            prompt = self.prompt(request)
            options = self.decode_options(request)
            stops = (*self.options.stop_strings, *request.stop)
            output = ResponseOutput(self, request, len(prompt), emit)
            kind = HookedGenerate if self.decoder.kind == "checkpoint" else PlainGenerate
            runner = kind(self._model, options, self.decoder, stops, self.options.expert_mass)

            def stop_now() -> bool:
                return cancelled() or output.assembler.stopped

            runner.run(prompt, output.handle, stop_now)
            self.last_stats = runner.stats
            if not cancelled():
                output.finish(runner.stats, None)

        return produce

    def prompt(self, request: ChatRequest) -> list[int]:
        """The request rendered with the checkpoint's chat template, as token ids."""
        from clover_code.engine.local.diffusion.chat import render_prompt

        return render_prompt(self.tokenizer, request)

    def decode_options(self, request: ChatRequest) -> Any:
        """The ``DecodeOptions`` of one request: the engine's, with the request's own."""
        from clover_code.engine.local.diffusion import DecodeOptions
        from clover_code.engine.local.diffusion.chat import stop_token_ids, token_id

        opts = self.options
        return DecodeOptions(
            mask_id=self.mask_id,
            block_size=opts.block_size,
            threshold=opts.threshold,
            max_new_tokens=request.max_tokens or opts.max_tokens,
            context_window=opts.context_window,
            stop_ids=stop_token_ids(self.tokenizer, self._model.config),
            end_id=token_id(self.tokenizer, "<|im_end|>"),
            controls=replace(self.controls, **request.controls),
            think_end_id=token_id(self.tokenizer, "</think>"),
            starts_in_reasoning=request.enable_thinking,
            confidences=opts.confidences,
            logits_shift=self.logits_shift,
            prefill="causal" if opts.prefill == "causal" else "block",
            remask_below=(
                opts.remask_below if request.remask_below is None else request.remask_below
            ),
            remask_rounds=(
                opts.remask_rounds if request.remask_rounds is None else request.remask_rounds
            ),
        )

    def piece(self, token: int) -> str:
        """One token's text (cached: drafts decode the same tokens again and again)."""
        piece = self._pieces.get(token)
        if piece is None:
            piece = self._pieces[token] = str(self.tokenizer.decode([token]))
        return piece


def _decoder(model: Any, options: HFOptions, controls: Any, mask_id: int, path: Path) -> Any:
    """The decoder for the settings; the builtin loop only on a forward it understands."""
    from clover_code.engine.local.diffusion.entry_point import choose_decoder, generate_choice
    from clover_code.engine.local.diffusion.selftest import forward_problem, is_stock

    try:
        choice = choose_decoder(model, options.decoder, controls, options.expert_mass)
    except ValueError as exc:
        raise EngineUnavailable(f"{exc} ({path})") from None
    if choice.kind != "builtin" or is_stock(model):
        return choice
    problem = forward_problem(model, mask_id)
    if problem is None:
        return choice
    why = f"clover-code's loop cannot drive this model: {problem}"
    fallback = generate_choice(model, why, controls, options.expert_mass)
    if fallback is not None and options.decoder != "builtin":
        return fallback
    raise EngineUnavailable(
        f"clover-code cannot decode the checkpoint at {path}: its remote-code model is not a "
        f"stock transformers class and {problem}, and it ships no diffusion_generate with a "
        "max_new_tokens parameter to decode with instead"
        if fallback is None
        else f"decoder = builtin, but {problem} ({path}); use decoder auto to run the "
        "checkpoint's own diffusion_generate"
    )


def _load(path: Path, options: HFOptions) -> tuple[Any, Any]:
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
    device = options.device
    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    dtype: Any = "auto" if options.dtype == "auto" else getattr(torch, options.dtype)
    try:
        tokenizer = AutoTokenizer.from_pretrained(path, trust_remote_code=options.trust_remote_code)
        # With accelerate, weights load straight onto the GPU (no host copy of
        # ~69 GB first); without it transformers refuses device_map.
        direct = device != "cpu" and importlib.util.find_spec("accelerate") is not None
        placement: dict[str, Any] = {"device_map": device} if direct else {}
        model: Any = AutoModelForCausalLM.from_pretrained(
            path, dtype=dtype, trust_remote_code=options.trust_remote_code, **placement
        )
        if not direct:
            model = model.to(device)
    except Exception as exc:
        raise _load_error(path, exc) from None
    model.eval()
    return model, tokenizer


def _routing(model: Any, options: HFOptions, path: Path) -> Any:
    from clover_code.engine.local.diffusion.experts import ExpertRouting, find_routers

    routers = find_routers(model)
    mass = options.expert_mass
    if not routers:
        if mass is not None:
            raise EngineUnavailable(
                f"expert selection (expert_mass) needs MoE router modules and the model at "
                f"{path} has none that clover-code can hook; unset expert_mass"
            )
        return None
    return ExpertRouting(routers, mass, options.expert_select)  # type: ignore[arg-type]


def _controls(path: Path, options: HFOptions) -> Any:
    from clover_code.engine.local.diffusion.controls import Controls

    return Controls.for_checkpoint(path, options.control_overrides)


def _load_error(path: Path, exc: Exception) -> EngineError:
    if _is_oom(exc):
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


def _engine_error(exc: Exception) -> EngineError:
    if _is_oom(exc):
        _free_memory()
        return EngineError(
            "the GPU ran out of memory while generating; lower max_tokens, compact the "
            "conversation, or free the GPU, then try again"
        )
    detail = " ".join(str(exc).split())[:300] or type(exc).__name__
    return EngineError(f"the local model failed while generating ({type(exc).__name__}: {detail})")


def _is_oom(exc: BaseException) -> bool:
    return type(exc).__name__ == "OutOfMemoryError" or "out of memory" in str(exc).lower()


def _free_memory() -> None:
    try:
        import torch
    except ImportError:
        return
    if torch.cuda.is_available():
        torch.cuda.empty_cache()
