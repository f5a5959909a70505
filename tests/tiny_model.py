"""A tiny random Qwen3.5-MoE checkpoint for tests: same hybrid family as Clover.

``build_tiny_checkpoint(path)`` writes a ``Qwen3_5MoeForCausalLM`` (Gated
DeltaNet linear attention + full attention, routed and shared experts; about
twenty thousand parameters) and a byte-level tokenizer carrying the Qwen3.x
special tokens and a Qwen3-style chat template. Tests load it back through
``from_pretrained``, exactly the path a real checkpoint takes.

``ScriptedLogits`` wraps the loaded model's forward: the real model still runs
(so the cache and recurrent state are exercised) but the logits it returns are
replaced by a script, which makes decoding deterministic for assertions.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import torch

from clover_code.engine.local.diffusion.forward import ModelForward
from clover_code.engine.local.diffusion.layout import Layout

SPECIAL_TOKENS = [
    "<|endoftext|>",
    "<|im_start|>",
    "<|im_end|>",
    "<think>",
    "</think>",
    "<tool_call>",
    "</tool_call>",
    "<tool_response>",
    "</tool_response>",
    "<|MASK|>",
]

CHAT_TEMPLATE = """{%- if tools %}<|im_start|>system
{% if messages[0].role == 'system' %}{{ messages[0].content }}

{% endif %}# Tools

<tools>
{% for tool in tools %}{{ tool | tojson }}
{% endfor %}</tools>
<|im_end|>
{% elif messages[0].role == 'system' %}<|im_start|>system
{{ messages[0].content }}<|im_end|>
{% endif %}
{%- for message in messages %}
{%- if message.role == 'user' %}<|im_start|>user
{{ message.content }}<|im_end|>
{% elif message.role == 'assistant' %}<|im_start|>assistant
{{ message.content or '' }}
{%- for call in message.tool_calls or [] %}
<tool_call>
<function={{ call.function.name }}>
{% for k, v in call.function.arguments.items() %}<parameter={{ k }}>
{{ v }}
</parameter>
{% endfor %}</function>
</tool_call>
{%- endfor %}<|im_end|>
{% elif message.role == 'tool' %}<|im_start|>user
<tool_response>
{{ message.content }}
</tool_response><|im_end|>
{% endif %}
{%- endfor %}
{%- if add_generation_prompt %}<|im_start|>assistant
{% if enable_thinking is defined and enable_thinking is false %}<think>

</think>

{% else %}<think>
{% endif %}{% endif %}"""


def _byte_level_tokenizer() -> Any:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from tokenizers.pre_tokenizers import ByteLevel

    alphabet = ByteLevel.alphabet()
    vocab = {ch: i for i, ch in enumerate(sorted(alphabet))}
    tok = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    tok.decoder = decoders.ByteLevel()
    tok.add_special_tokens(SPECIAL_TOKENS)
    return tok


def build_tiny_checkpoint(
    path: Path,
    *,
    mask_token: bool = True,
    layers: Sequence[str] = ("linear", "full", "linear"),
    experts: int = 4,
    top_k: int = 2,
    router_scale: float = 1.0,
    expert_scale: float = 1.0,
) -> Path:
    """Write a tiny random checkpoint (model + tokenizer + chat template) to ``path``.

    ``router_scale`` multiplies the routers' random weights: a trained router is
    far from uniform, and a larger scale makes the random one peaked like it.
    ``expert_scale`` multiplies the routed experts' weights, so which experts a
    token is sent to weighs on the logits as it does in a trained model.
    """
    from transformers import PreTrainedTokenizerFast, Qwen3_5MoeForCausalLM, Qwen3_5MoeTextConfig

    path.mkdir(parents=True, exist_ok=True)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=_byte_level_tokenizer(),
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        mask_token="<|MASK|>" if mask_token else None,
    )
    fast.chat_template = CHAT_TEMPLATE
    fast.save_pretrained(path)
    vocab = len(fast)
    config = Qwen3_5MoeTextConfig(
        vocab_size=vocab,
        hidden_size=16,
        num_hidden_layers=len(layers),
        layer_types=[f"{kind}_attention" for kind in layers],
        num_attention_heads=2,
        num_key_value_heads=1,
        head_dim=8,
        linear_conv_kernel_dim=4,
        linear_key_head_dim=8,
        linear_value_head_dim=8,
        linear_num_key_heads=1,
        linear_num_value_heads=2,
        moe_intermediate_size=8,
        shared_expert_intermediate_size=8,
        num_experts=experts,
        num_experts_per_tok=top_k,
        max_position_embeddings=131_072,
        eos_token_id=fast.convert_tokens_to_ids("<|im_end|>"),
        pad_token_id=fast.pad_token_id,
    )
    torch.manual_seed(0)
    model = Qwen3_5MoeForCausalLM(config)
    with torch.no_grad():
        for name, param in model.named_parameters():
            if name.endswith("mlp.gate.weight"):
                param.mul_(router_scale)
            elif ".mlp.experts." in name:
                param.mul_(expert_scale)
    model.save_pretrained(path)
    if mask_token:
        cfg = json.loads((path / "config.json").read_text())
        cfg["mask_token_id"] = fast.mask_token_id
        (path / "config.json").write_text(json.dumps(cfg, indent=2))
    return path


Script = Callable[[torch.Tensor, int], torch.Tensor]
"""(one row's new ids [1, n], its position before them) -> logits [1, n, vocab]."""


class ScriptedLogits:
    """A ``ModelForward`` whose logits come from a script; the real model still runs."""

    def __init__(self, inner: ModelForward, script: Script) -> None:
        self.inner = inner
        self.script = script
        self.vocab_size = inner.vocab_size
        self.device = inner.device
        self.splits = inner.splits
        self.calls: list[list[int]] = []
        """The ids of every row of every forward (padding left out)."""

    def new_cache(self) -> Any:
        return self.inner.new_cache()

    def cache_length(self, cache: Any) -> int:
        return self.inner.cache_length(cache)

    def mid_states(self) -> Any:
        return self.inner.mid_states()

    def __call__(
        self, ids: torch.Tensor, cache: Any, layout: Layout, keep: int | None = None
    ) -> torch.Tensor:
        self.inner(ids, cache, layout, keep)
        rows = []
        for b in range(ids.shape[0]):
            used = layout.used(b)
            self.calls.append(ids[b, :used].tolist())
            logits = self.script(ids[b : b + 1, :used], layout.past[b])[0]
            pad = logits.new_zeros((ids.shape[1] - used, logits.shape[-1]))
            rows.append(torch.cat([logits, pad]))
        out = torch.stack(rows)
        return out[:, -keep:] if keep is not None else out


def peaked(vocab: int, rows: Sequence[tuple[int, float]]) -> torch.Tensor:
    """Logits [1, len(rows), vocab] whose argmax is ``token`` with probability ``p``."""
    out = torch.full((1, len(rows), vocab), 0.0)
    for i, (token, p) in enumerate(rows):
        # softmax: p = e^x / (e^x + (vocab - 1)) -> x = log(p (vocab - 1) / (1 - p))
        p = min(p, 1 - 1e-7)
        out[0, i, token] = float(torch.log(torch.tensor(p * (vocab - 1) / (1 - p))))
    return out


def script_text(
    backend: Any,
    text: str,
    *,
    unsure: bool = False,
    confidence: Callable[[int], float] | None = None,
) -> None:
    """Make the loaded model 'say' ``text`` then stop, one confident block per step.

    The real model still runs; its logits are replaced by rows peaked on the
    token ``text`` has at each position (read from the forward's position ids,
    counted from the end of the latest prompt the backend rendered). ``unsure``:
    every other position is below the threshold, so a block takes several steps.
    ``confidence``: the probability of the token at each index of the response.
    """
    target = backend.tokenizer(text, add_special_tokens=False)["input_ids"]
    target.append(backend.tokenizer.convert_tokens_to_ids("<|im_end|>"))
    model = backend._model
    real = model.forward
    vocab = model.config.vocab_size
    prompt_len = {"n": 0}

    @functools.wraps(real)
    def forward(*args: Any, **kwargs: Any) -> Any:
        out = real(*args, **kwargs)
        kept = out.logits.shape[1]
        positions = kwargs["position_ids"][:, -kept:].tolist()
        rows = [
            [
                (
                    target[min(max(p - prompt_len["n"], 0), len(target) - 1)],
                    confidence(p - prompt_len["n"])
                    if confidence is not None
                    else 0.9
                    if unsure and p % 2
                    else 0.99,
                )
                for p in row
            ]
            for row in positions
        ]
        out.logits = torch.cat([peaked(vocab, row) for row in rows])
        return out

    model.forward = forward
    original = backend.prompt

    def prompt(request: Any) -> list[int]:
        ids: list[int] = original(request)
        prompt_len["n"] = len(ids)
        return ids

    backend.prompt = prompt


def script_by_position(backend: Any, first: int = 40) -> list[int]:
    """Make the loaded model say token ``first + position % 50`` at every position, sure
    enough to fill a block in one step; returns the rows of every forward, as they come
    (how many sequences each forward carried)."""
    model = backend._model
    real = model.forward
    vocab = model.config.vocab_size
    widths: list[int] = []

    @functools.wraps(real)
    def forward(*args: Any, **kwargs: Any) -> Any:
        out = real(*args, **kwargs)
        kept = out.logits.shape[1]
        positions = kwargs["position_ids"][:, -kept:].tolist()
        widths.append(len(positions))
        rows = [[(first + p % 50, 0.99) for p in row] for row in positions]
        out.logits = torch.cat([peaked(vocab, row) for row in rows])
        return out

    model.forward = forward
    return widths


REMOTE_DECODER = '''"""A tiny block-decoding entry point in remote code (a test fixture).

Dream-style diffusion_generate with blocks aligned to absolute positions (as
SGLang cuts them: the first one is what is left of the prompt's last block):
each block starts masked; each step runs the model over the whole sequence
(no cache) and fills every masked position of the block whose confidence
clears threshold, else the single most confident one, calling the hook after
every step.
"""

import torch
from transformers import Qwen3_5MoeForCausalLM

CALLS = []


class TinyDLLMForCausalLM(Qwen3_5MoeForCausalLM):
    @torch.no_grad()
    def diffusion_generate(
        self,
        inputs,
        max_new_tokens=16,
        threshold=0.9,
        block_length=4,
        mask_token_id=None,
        stop_strings=None,
        repetition_penalty=1.0,
        generation_tokens_hook_func=None,
    ):
        CALLS.append(dict(max_new_tokens=max_new_tokens, threshold=threshold,
                          block_length=block_length, mask_token_id=mask_token_id,
                          stop_strings=stop_strings, repetition_penalty=repetition_penalty))
        hook = generation_tokens_hook_func or (lambda step, x, logits: x)
        mask = mask_token_id if mask_token_id is not None else self.config.mask_token_id
        x = torch.cat([inputs, torch.full((1, max_new_tokens), mask)], dim=1)
        x = hook(None, x, None)
        start, step = inputs.shape[1], 0
        end = start + max_new_tokens
        first = (start // block_length + 1) * block_length
        bounds = [start] + list(range(first, end, block_length))
        for lo in bounds:
            hi = min((lo // block_length + 1) * block_length, end)
            while bool((x[0, lo:hi] == mask).any()):
                logits = self(input_ids=x).logits[0, lo:hi]
                conf, arg = torch.softmax(logits.float(), -1).max(-1)
                masked = x[0, lo:hi] == mask
                conf = conf.masked_fill(~masked, -1.0)
                fill = (conf > threshold) & masked
                if not bool(fill.any()):
                    fill[conf.argmax()] = True
                x[0, lo:hi] = torch.where(fill, arg, x[0, lo:hi])
                x = hook(step, x, logits)
                step += 1
        return x
'''

KWARGS_DECODER = '''"""An entry point that takes everything as **kwargs (a test fixture)."""

from transformers import Qwen3_5MoeForCausalLM


class TinyDLLMForCausalLM(Qwen3_5MoeForCausalLM):
    def diffusion_generate(self, inputs, **kwargs):
        raise AssertionError("a **kwargs entry point must not be taken")
'''


CACHELESS_FORWARD = '''"""A model whose forward keeps no cache of its own (a test fixture).

It takes the arguments clover-code's loop passes and ignores the cache and the
mask: the loop must not drive it.
"""

import torch
from transformers import Qwen3_5MoeForCausalLM


class TinyDLLMForCausalLM(Qwen3_5MoeForCausalLM):
    def forward(self, input_ids=None, attention_mask=None, position_ids=None,
                past_key_values=None, use_cache=None, **kwargs):
        return super().forward(input_ids=input_ids, use_cache=False)
'''

CACHELESS_GENERATE = (
    CACHELESS_FORWARD
    + """
    @torch.no_grad()
    def diffusion_generate(self, inputs, max_new_tokens=16, threshold=0.9, block_length=4,
                           mask_token_id=None):
        mask = mask_token_id if mask_token_id is not None else self.config.mask_token_id
        x = torch.cat([inputs, torch.full((1, max_new_tokens), mask)], dim=1)
        start = inputs.shape[1]
        while bool((x[0, start:] == mask).any()):
            logits = self(input_ids=x).logits[0, start:]
            conf, arg = torch.softmax(logits.float(), -1).max(-1)
            masked = x[0, start:] == mask
            conf = conf.masked_fill(~masked, -1.0)
            x[0, start + int(conf.argmax())] = arg[conf.argmax()]
        return x
"""
)


def add_remote_decoder(path: Path, source: str = REMOTE_DECODER) -> Path:
    """Ship ``source`` as the checkpoint's remote code (``auto_map``), as Clover does."""
    (path / "modeling_tiny_dllm.py").write_text(source)
    cfg = json.loads((path / "config.json").read_text())
    cfg["auto_map"] = {"AutoModelForCausalLM": "modeling_tiny_dllm.TinyDLLMForCausalLM"}
    cfg["architectures"] = ["TinyDLLMForCausalLM"]
    (path / "config.json").write_text(json.dumps(cfg, indent=2))
    return path
