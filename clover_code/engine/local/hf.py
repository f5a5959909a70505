"""The local Hugging Face backend: block diffusion on a transformers checkpoint.

Loads ``AutoModelForCausalLM.from_pretrained(path, trust_remote_code=True)``
with the checkpoint's tokenizer and chat template (``hf_checkpoint.py``), and
decodes with the block-diffusion loop (``engine/local/diffusion``), streaming a
``BlockDraft`` per denoising step and a ``BlockCommitted`` per block. Responses
that run at the same time (parallel subagents, several sessions, concurrent
``serve`` requests) are decoded together, up to ``max_batch`` per forward
(``batching.py``). torch and transformers are imported only when this backend
is built (the ``local`` extra).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from clover_code.engine.base import ChatRequest, EngineWarning
from clover_code.engine.events import EngineEvent, Failed, Finished
from clover_code.engine.local.hf_checkpoint import (
    checkpoint_controls,
    expert_routing,
    find_mask_id,
    is_oom,
    load_checkpoint,
    logits_shift,
    pick_decoder,
)
from clover_code.engine.local.hf_output import BatchedResponse, ResponseOutput
from clover_code.errors import EngineError, EngineUnavailable

__all__ = ["HFBackend", "HFOptions"]

CLOSE_WAIT_S = 10.0
"""How long closing waits for the decoding thread to finish its step."""


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


class HFBackend:
    """A ``Backend`` that decodes a local checkpoint with the block-diffusion loop."""

    name = "hf"

    def __init__(self, model_path: str, options: HFOptions | None = None) -> None:
        self.options = options or HFOptions()
        self.block_size = self.options.block_size
        self.model = Path(model_path).name or model_path
        self.path = Path(model_path).expanduser()
        self._model, self.tokenizer = load_checkpoint(
            self.path,
            device=self.options.device,
            dtype=self.options.dtype,
            trust_remote_code=self.options.trust_remote_code,
        )
        mask_id = find_mask_id(self._model.config, self.tokenizer)
        if mask_id is None:
            raise EngineUnavailable(
                f"the checkpoint at {self.path} has no mask token (no mask_token_id in "
                "config.json and no mask_token in the tokenizer); block diffusion needs a "
                "diffusion checkpoint such as Clover"
            )
        self.mask_id = mask_id
        self.controls = self.options.controls or checkpoint_controls(
            self.path, self.options.control_overrides
        )
        self.decoder = pick_decoder(
            self._model,
            self.controls,
            mask_id,
            self.path,
            decoder=self.options.decoder,
            expert_mass=self.options.expert_mass,
        )
        self.notices: list[str] = [self.decoder.notice()]
        """Said once at load (the app's notice, serve's log) and by ``status()``."""
        self.routing = expert_routing(
            self._model,
            self.path,
            mass=self.options.expert_mass,
            select=self.options.expert_select,
        )
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


def _engine_error(exc: Exception) -> EngineError:
    if is_oom(exc):
        _free_memory()
        return EngineError(
            "the GPU ran out of memory while generating; lower max_tokens, compact the "
            "conversation, or free the GPU, then try again"
        )
    detail = " ".join(str(exc).split())[:300] or type(exc).__name__
    return EngineError(f"the local model failed while generating ({type(exc).__name__}: {detail})")


def _free_memory() -> None:
    try:
        import torch
    except ImportError:
        return
    if torch.cuda.is_available():
        torch.cuda.empty_cache()
