"""The model and engine part of the settings: which engine runs which model, how.

``ModelSettings`` holds these fields; ``clover_code.config.settings.Settings`` inherits
them (they come first in its field order) and adds the rest.
"""

# Annotations are objects here, not text (no ``from __future__ import annotations``):
# pydantic reads every field's, and text would be compiled and evaluated at each start.

from typing import Literal, Self

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator

from clover_code.config.models import ModelEntry, resolve_model
from clover_code.config.sources import check_base_url

EngineKind = Literal["auto", "remote", "sglang", "hf"]


class ModelSettings(BaseModel):
    """The settings that choose and tune the model, its engine and ``clover-code serve``."""

    # The same config as Settings. The field docstrings document the flags and the
    # reference pages (clover_code.config.field_docs reads them when asked).
    model_config = ConfigDict(
        extra="forbid",
        validate_default=True,
        protected_namespaces=(),
        # Built when first used: only Settings, which inherits these fields, is.
        defer_build=True,
    )

    engine: EngineKind = "auto"
    """Which engine runs the model: auto, remote, sglang or hf.

    auto means remote when a base URL is set, else SGLang on a local GPU."""

    base_url: str | None = None
    """URL of an OpenAI-compatible server, e.g. http://localhost:30000/v1."""

    model: str | None = None
    """Model name to request (a server id or a name in [models]); unset means the first
    model the server lists."""

    models: dict[str, ModelEntry] = Field(default_factory=dict)
    """Models by a short name, each with what it takes, e.g. [models.fast] id =
    "qwen3-coder-30b", context_window = 65536, vision = false (docs/models.md)."""

    api_key: SecretStr | None = None
    """API key sent as a bearer token to the remote server."""

    model_path: str | None = None
    """Local checkpoint directory for the sglang and hf engines."""

    block_size: int = Field(32, ge=1, le=4096)
    """Tokens per diffusion block; token-by-token servers are grouped into blocks of this size."""

    remote_drafts: bool = False
    """Ask a `clover-code serve` server to stream its denoising drafts too (an extension)."""

    raw_parsing: Literal["auto", "always", "never"] = "auto"
    """Client-side parsing of Qwen3 reasoning and tool-call text: auto, always or never.

    always: the server sends raw text; auto: native fields when present, and
    tool-call XML or explicit think tags found in the text are parsed too."""

    thinking: bool = True
    """Let the model think before answering (Qwen3 enable_thinking)."""

    max_tokens: int | None = Field(None, ge=1)
    """Cap on tokens per model response. Unset: remote servers get what the context
    window leaves after the prompt, at most 32768 (so one runaway answer cannot run
    for minutes); local engines default to 8192."""

    temperature: float | None = Field(None, ge=0.0, le=2.0)
    """Sampling temperature for autoregressive servers (dLLM servers ignore it)."""

    context_window: int = Field(131_072, ge=1024)
    """Tokens shared by prompt and response."""

    threshold: float = Field(0.95, gt=0.0, le=1.0)
    """Block diffusion: fill every masked position whose confidence exceeds this (hf, sglang)."""

    remask_below: float = Field(0.0, ge=0.0, le=1.0)
    """Block diffusion: once a block is fully denoised, mask again the positions filled
    with a confidence below this and denoise them once more with the whole block as
    context, before the block is committed (hf engine and clover-code serve; 0: off)."""

    remask_rounds: int = Field(1, ge=1, le=8)
    """Block diffusion, with remask_below: how many times a block may be re-denoised."""

    dtype: Literal["auto", "bfloat16", "float16", "float32"] = "auto"
    """Weight dtype for the hf engine; auto takes the checkpoint's."""

    device: str = "auto"
    """Torch device for the hf engine (cuda, cuda:1, cpu); auto picks cuda when present."""

    repetition_penalty: float | None = Field(None, ge=1.0)
    """Local engines: penalty on tokens already in the response (1.0 off; unset: the
    checkpoint's generation_config.json value, else 1.05)."""

    presence_penalty: float | None = Field(None, ge=0.0)
    """Local engines: subtracted from the logit of tokens already in the response (0 off;
    unset: the checkpoint's generation_config.json value, else 0)."""

    frequency_penalty: float | None = Field(None, ge=0.0)
    """Local engines: subtracted per earlier occurrence in the response (0 off; unset: the
    checkpoint's generation_config.json value, else 0)."""

    end_bias_after: int | None = Field(None, ge=0)
    """Local engines: response length after which the end-of-response bias grows (unset:
    the checkpoint's generation_config.json value, else 16384)."""

    end_bias_per_1k: float | None = Field(None, ge=0.0)
    """Local engines: logit added to the end token per 1,000 tokens past end_bias_after
    (0 off; unset: the checkpoint's generation_config.json value, else 1.0)."""

    think_bias_after: int | None = Field(None, ge=0)
    """Local engines: thinking length after which the end-of-thinking bias grows (unset:
    the checkpoint's generation_config.json value, else 8192)."""

    think_bias_per_1k: float | None = Field(None, ge=0.0)
    """Local engines: logit added to </think> per 1,000 thinking tokens past think_bias_after
    (0 off; unset: the checkpoint's generation_config.json value, else 1.0)."""

    decoder: Literal["auto", "checkpoint", "builtin"] = "auto"
    """hf engine: who decodes. auto: the checkpoint's own block-decoding entry point
    (diffusion_generate with a step hook, in its remote code) when it ships one, else
    clover-code's loop; checkpoint: that entry point or an error; builtin: our loop."""

    expert_mass: float | None = Field(None, gt=0.0, le=1.0)
    """hf engine: block-level expert selection. Per block, routing is restricted to the
    fewest experts holding this share of the block's router probability mass (0.9 on the
    model card; never fewer than top-k); unset: off."""

    expert_select: Literal["block", "filled", "half", "step"] = "block"
    """hf engine, with expert_mass: when a block's kept experts are chosen. block: at its
    first (all-mask) forward, held through its steps and its commit; filled: after its
    first step; half: at the first forward and again once half the block is filled; step:
    at every forward."""

    prefill: Literal["block", "causal"] = "block"
    """hf engine, our loop: how the prompt is encoded. block: bidirectional attention inside
    each aligned block, as SGLang's dLLM extend mode does; causal: left to right."""

    max_batch: int = Field(8, ge=1, le=64)
    """hf engine, our loop: responses decoded together in one forward (parallel subagents,
    sessions, concurrent serve requests); more wait for a place."""

    logits_shift: Literal["auto", "none", "one"] = "auto"
    """hf engine, our loop: none when the logits at position i predict token i, one when
    they predict token i + 1 (models converted from autoregressive ones); auto reads the
    checkpoint's config.json key logits_shift ("none" or "one"), else none."""

    tp_size: int = Field(1, ge=1)
    """SGLang engine: tensor-parallel GPUs."""

    mem_fraction_static: float | None = Field(None, gt=0.0, lt=1.0)
    """SGLang engine: share of GPU memory for weights and KV cache; unset lets SGLang choose."""

    quantization: str | None = None
    """SGLang engine: quantization method (e.g. fp8); unset means the checkpoint's."""

    serve_host: str = "127.0.0.1"
    """clover-code serve: address to listen on."""

    serve_port: int = Field(8000, ge=1, le=65535)
    """clover-code serve: port to listen on."""

    serve_drafts: bool = False
    """clover-code serve: stream denoising drafts to every client (the clover_draft extension)."""

    serve_api_key: SecretStr | None = None
    """clover-code serve: the key every client sends (``Authorization: Bearer``); unset
    makes a random one, printed once at start."""

    serve_max_body_mb: float = Field(16.0, gt=0)
    """clover-code serve: the largest request body read, in MiB."""

    serve_read_timeout: float = Field(30.0, gt=0)
    """clover-code serve: seconds a request body may take to arrive."""

    @field_validator("base_url")
    @classmethod
    def _base_url_is_http(cls, value: str | None) -> str | None:
        return check_base_url(value)

    def for_model(self, name: str, served_window: int | None = None) -> Self:
        """These settings for the model ``name`` (an alias or an id): its id, its
        ``[models]`` context window (else ``served_window``, what the server reports,
        else the setting) and its tool-call reading."""
        chosen = resolve_model(self.models, name)
        entry = chosen.entry or ModelEntry()
        window = entry.context_window or served_window or self.context_window
        parsing = entry.raw_parsing or self.raw_parsing
        update = {"model": chosen.id, "context_window": window, "raw_parsing": parsing}
        return self.model_copy(update=update)
