"""Clover in-process through SGLang (the ``sglang`` extra, a CUDA GPU).

``sglang.Engine`` runs the model with its ``LowConfidence`` dLLM algorithm
(threshold and block size handed over in a small YAML file). Prompts are
rendered here with the checkpoint's chat template and sent as ``input_ids``;
SGLang streams cumulative ``output_ids`` once per committed block, which are
diffed into ``BlockCommitted`` events and parsed with our Qwen3 parser.
SGLang skips the sampler for dLLMs, so there are no drafts on this path.

Before the engine starts, the checkpoint's ``architectures`` are compared with
the installed SGLang's dLLM table (``sglang_table.py``): a model stock SGLang
cannot run is one sentence naming the ways that work (the model's own SGLang
build behind ``--base-url``, or ``--engine hf``), not a start-up traceback.
What this path cannot apply (the penalties and end biases, which SGLang's dLLM
path has no sampler for; expert selection unless the build takes it) is said
once in ``notices``.
"""

from __future__ import annotations

import asyncio
import importlib
import inspect
import tempfile
from collections.abc import AsyncGenerator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from clover_code.engine.base import ChatRequest, EngineWarning
from clover_code.engine.events import EngineEvent, Failed, Finished, FinishReason
from clover_code.errors import EngineError, EngineUnavailable, missing_extra

__all__ = ["OutputDiff", "SGLangBackend", "SGLangOptions", "algorithm_yaml", "engine_kwargs"]


@dataclass(slots=True)
class SGLangOptions:
    """What the in-process SGLang engine is started with."""

    block_size: int = 32
    threshold: float = 0.95
    tp_size: int = 1
    mem_fraction_static: float | None = None
    quantization: str | None = None
    max_tokens: int = 8192
    context_window: int = 131_072
    expert_mass: float | None = None
    """Asked-for block-level expert selection: passed when the build takes it, else named
    in the notice."""
    remask_below: float = 0.0
    """Asked-for re-denoising: never applied (named in the notice)."""


NOT_APPLIED = (
    "the repetition, presence and frequency penalties",
    "the end-of-response and end-of-thinking biases",
)
"""Controls of the hf engine that SGLang's dLLM path has no place for."""

EXPERT_MASS_ARGS = ("dllm_expert_mass", "expert_mass")
"""Server argument names a build that offers block-level expert selection may use."""


def algorithm_yaml(options: SGLangOptions) -> str:
    """The ``dllm_algorithm_config`` YAML: the LowConfidence threshold and block size."""
    return f"threshold: {options.threshold!r}\nblock_size: {options.block_size}\n"


def engine_kwargs(model_path: str, options: SGLangOptions, config_path: Path) -> dict[str, Any]:
    """Keyword arguments for ``sglang.Engine``."""
    kwargs: dict[str, Any] = {
        "model_path": model_path,
        "dllm_algorithm": "LowConfidence",
        "dllm_algorithm_config": str(config_path),
        "trust_remote_code": True,
        "tp_size": options.tp_size,
        "context_length": options.context_window,
        "log_level": "error",
        # Whole output so far in every chunk (SGLang's default, stated so that
        # OutputDiff never has to guess).
        "incremental_streaming_output": False,
    }
    if options.mem_fraction_static is not None:
        kwargs["mem_fraction_static"] = options.mem_fraction_static
    if options.quantization:
        kwargs["quantization"] = options.quantization
    return kwargs


class OutputDiff:
    """Turns SGLang's cumulative ``output_ids`` into the ids new in each chunk."""

    def __init__(self) -> None:
        self.ids: list[int] = []

    def new_ids(self, chunk: dict[str, Any]) -> list[int]:
        """The ids this chunk adds (empty for a chunk that adds none)."""
        # A copy: SGLang hands over its live list by reference.
        output = list(chunk.get("output_ids") or [])
        seen = len(self.ids)
        # Cumulative, as the engine is started; a chunk that does not extend
        # what came before is taken as incremental (an engine started elsewhere).
        cumulative = len(output) >= seen and output[:seen] == self.ids
        fresh = output[seen:] if cumulative else output
        self.ids.extend(fresh)
        return fresh


def _finish_reason(chunk: dict[str, Any]) -> FinishReason | None:
    info = (chunk.get("meta_info") or {}).get("finish_reason")
    if not info:
        return None
    kind = info.get("type") if isinstance(info, dict) else str(info)
    return "length" if kind == "length" else "stop"


class SGLangBackend:
    """A ``Backend`` running Clover in this process through ``sglang.Engine``."""

    name = "sglang"

    def __init__(
        self,
        model_path: str,
        options: SGLangOptions | None = None,
        *,
        cuda_available: Callable[[], bool] | None = None,
    ) -> None:
        self.options = options or SGLangOptions()
        self.block_size = self.options.block_size
        self.model = Path(model_path).name or model_path
        try:
            sglang = importlib.import_module("sglang")
        except ImportError as exc:
            raise missing_extra(exc, "--engine sglang (on a machine with a CUDA GPU)") from None
        if not (cuda_available or _cuda_available)():
            raise EngineUnavailable(
                "the sglang engine needs a CUDA GPU and none is visible; run clover-code on "
                "the GPU machine, or start an SGLang server there and use --base-url"
            )
        from clover_code.engine.local.sglang_table import (
            checkpoint_architectures,
            dllm_architectures,
            unsupported,
            unsupported_sentence,
        )

        version = str(getattr(sglang, "__version__", "")) or "(version unknown)"
        table = dllm_architectures()
        refusal = unsupported(model_path, table, version)
        if refusal is not None:
            raise EngineUnavailable(refusal)
        extra: dict[str, Any] = {}
        not_applied = list(NOT_APPLIED)
        if self.options.expert_mass is not None:
            name = _expert_mass_arg(sglang)
            if name is None:
                not_applied.append("block-level expert selection (expert_mass)")
            else:
                extra[name] = self.options.expert_mass
        self.notices: list[str] = [
            "The sglang engine cannot apply "
            + ", ".join(not_applied[:-1])
            + f" or {not_applied[-1]}: SGLang's diffusion path decodes without them."
        ]
        """Said once at load: what this path does not do (that it reports no fill
        confidences is said by the session, where they would show)."""
        if self.options.remask_below > 0:
            self.notices.append(
                EngineWarning(
                    "Re-denoising (remask_below) is off: SGLang exposes no fill confidences "
                    "to re-denoise by; only clover-code serve or the hf engine re-denoises."
                )
            )
        self.failure: EngineError | None = None
        """The error the last failed response ended with."""
        from transformers import AutoTokenizer

        self._config_dir = tempfile.TemporaryDirectory(prefix="clover-sglang-")
        config_path = Path(self._config_dir.name) / "dllm_algorithm.yaml"
        config_path.write_text(algorithm_yaml(self.options))
        try:
            self.tokenizer = AutoTokenizer.from_pretrained(model_path, trust_remote_code=True)
            kwargs = {**engine_kwargs(model_path, self.options, config_path), **extra}
            self.engine: Any = sglang.Engine(**kwargs)
        except Exception as exc:
            self._config_dir.cleanup()
            if "Unknown diffusion LLM" in str(exc):
                archs = checkpoint_architectures(model_path) or ["this architecture"]
                raise EngineUnavailable(unsupported_sentence(archs[0], table, version)) from None
            detail = " ".join(str(exc).split())[:300] or type(exc).__name__
            raise EngineUnavailable(
                f"SGLang could not start the model at {model_path} ({detail}); check the "
                "path, the GPU memory (--mem-fraction-static) and SGLang's requirements"
            ) from None

    async def check(self) -> None:
        """The engine is started at construction; nothing left to check."""

    async def aclose(self) -> None:
        """Shut the engine down and free the GPU."""
        engine, self.engine = self.engine, None
        if engine is not None:
            await asyncio.to_thread(engine.shutdown)
        self._config_dir.cleanup()

    async def stream(self, request: ChatRequest) -> AsyncGenerator[EngineEvent, None]:
        """Stream one response; engine trouble becomes ``Failed`` + ``Finished``."""
        from clover_code.engine.local.diffusion.chat import (
            OutputAssembler,
            render_prompt,
            stop_token_ids,
        )

        output_begun = False
        try:
            if self.engine is None:
                raise EngineUnavailable("the SGLang engine was shut down; restart clover-code")
            prompt = render_prompt(self.tokenizer, request)
            if len(prompt) >= self.options.context_window:
                from clover_code.errors import ContextOverflow

                raise ContextOverflow(
                    f"the prompt is {len(prompt):,} tokens but the model's context window is "
                    f"{self.options.context_window:,}; compact or clear the conversation"
                )
            # Stop strings are cut here as well as by SGLang: the same rule on
            # every engine, whatever the server does inside a block.
            assembler = OutputAssembler(self.tokenizer, request, len(prompt), request.stop)
            diff = OutputDiff()
            stops = stop_token_ids(self.tokenizer, None)
            reason: FinishReason = "stop"
            params: dict[str, Any] = {
                "max_new_tokens": request.max_tokens or self.options.max_tokens
            }
            if request.stop:
                params["stop"] = list(request.stop)
            chunks = self.engine.async_generate(
                input_ids=prompt, sampling_params=params, stream=True
            )
            if inspect.isawaitable(chunks):  # ``async def`` returning the generator
                chunks = await chunks
            try:
                async for chunk in chunks:
                    fresh = [i for i in diff.new_ids(chunk) if i not in stops]
                    if fresh:
                        output_begun = True
                        for event in assembler.block(fresh, None):
                            yield event
                    reason = _finish_reason(chunk) or reason
                    if assembler.stopped:
                        reason = "stop"
                        break
            finally:
                # Closing the generator aborts the request inside SGLang.
                close = getattr(chunks, "aclose", None)
                if close is not None:
                    await close()
            for event in assembler.finish(reason):
                yield event
        except EngineError as exc:
            self.failure = exc
            yield Failed(exc, partial=output_begun)
            yield Finished("interrupted" if output_begun else "error")
        except Exception as exc:
            detail = " ".join(str(exc).split())[:300] or type(exc).__name__
            self.failure = EngineError(f"SGLang failed while generating ({detail})")
            yield Failed(self.failure, output_begun)
            yield Finished("interrupted" if output_begun else "error")


def _expert_mass_arg(sglang: Any) -> str | None:
    """The server argument this SGLang build takes expert selection under, if any."""
    import dataclasses

    server_args = getattr(sglang, "ServerArgs", None)
    if server_args is None:
        try:
            server_args = importlib.import_module("sglang.srt.server_args").ServerArgs
        except Exception:
            return None
    if not dataclasses.is_dataclass(server_args):
        return None
    names = {f.name for f in dataclasses.fields(server_args)}
    return next((n for n in EXPERT_MASS_ARGS if n in names), None)


def _cuda_available() -> bool:
    import torch

    return bool(torch.cuda.is_available())
