"""GPU check: a full-size Clover-shaped model with random bf16 weights, on one GPU.

Needs one H200-class GPU (about 70 GB for the weights), torch and
transformers; downloads nothing. Builds ``Qwen3_5MoeForCausalLM`` with
Clover-35B-A3B's shape (40 layers, hybrid Gated DeltaNet + full attention,
256 routed experts, top-8, one shared expert), then times

  1. one 32-token block forward on top of a 1,024-token cached prefix, and
  2. one full block decode through our loop (``engine/diffusion``),

and prints them against the floor: about 1.2 ms per forward if all 32 tokens
share their experts, about 9.4 ms with even routing (every token reading its
own 8 experts' weights from HBM). Random weights give near-uniform
confidences, so the decode takes the one-position-per-step fallback: 32
steps, the worst case; its per-forward time is the figure to compare.

Run: python bench/gpu_check.py   (a few minutes: most of it is building the model)
Put the figures in bench/README.md with the date and the GPU.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

FLOOR_SHARED_MS = 1.2
FLOOR_EVEN_MS = 9.4


def clover_config(scale: float = 1.0) -> Any:
    """A ``Qwen3_5MoeTextConfig`` shaped like Clover-35B-A3B (``scale`` < 1 shrinks it)."""
    from transformers import Qwen3_5MoeTextConfig

    def s(value: int, minimum: int = 1) -> int:
        return max(minimum, int(value * scale))

    layers = s(40, 4)
    return Qwen3_5MoeTextConfig(
        vocab_size=s(248_320, 64),
        hidden_size=s(2048, 16),
        num_hidden_layers=layers,
        layer_types=[
            "full_attention" if (i + 1) % 4 == 0 else "linear_attention" for i in range(layers)
        ],
        num_attention_heads=16,
        num_key_value_heads=2,
        head_dim=s(256, 8),
        linear_conv_kernel_dim=4,
        linear_key_head_dim=s(128, 8),
        linear_value_head_dim=s(128, 8),
        linear_num_key_heads=16,
        linear_num_value_heads=32,
        moe_intermediate_size=s(512, 8),
        shared_expert_intermediate_size=s(512, 8),
        num_experts=s(256, 8),
        num_experts_per_tok=8,
        max_position_embeddings=131_072,
        eos_token_id=s(248_320, 64) - 2,
        mask_token_id=s(248_320, 64) - 1,
    )


def build_model(config: Any, device: str, dtype: Any) -> Any:
    """The model with random weights, created directly on ``device`` in ``dtype``."""
    import torch
    from transformers import Qwen3_5MoeForCausalLM

    previous = torch.get_default_dtype()
    torch.set_default_dtype(dtype)
    try:
        with torch.device(device):
            model = Qwen3_5MoeForCausalLM(config)
    finally:
        torch.set_default_dtype(previous)
    return model.eval()


def _timed(fn: Any, sync: Any, repeat: int) -> float:
    fn()
    sync()
    start = time.perf_counter()
    for _ in range(repeat):
        fn()
    sync()
    return (time.perf_counter() - start) / repeat


def main(argv: list[str] | None = None) -> int:
    """Build, time, print."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=float, default=1.0, help="shrink the model (tests)")
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--prefix", type=int, default=1024)
    args = parser.parse_args(argv)
    import torch

    from clover_code.engine.diffusion import BlockDiffusion, Controls, DecodeOptions
    from clover_code.engine.diffusion.forward import HFForward
    from clover_code.engine.diffusion.state import CacheCheckpoint

    if args.device.startswith("cuda") and not torch.cuda.is_available():
        print("gpu_check: no CUDA GPU is visible; run it on the GPU machine.", file=sys.stderr)
        return 3
    dtype = torch.bfloat16 if args.device.startswith("cuda") else torch.float32
    sync = torch.cuda.synchronize if args.device.startswith("cuda") else (lambda: None)
    config = clover_config(args.scale)
    start = time.perf_counter()
    model = build_model(config, args.device, dtype)
    params = sum(p.numel() for p in model.parameters())
    size = f"{params / 1e9:.2f}B" if params >= 1e9 else f"{params / 1e6:.1f}M"
    print(f"built {size} parameters in {time.perf_counter() - start:.0f} s")
    forward = HFForward(model)
    mask = int(config.mask_token_id)
    prompt = torch.randint(0, config.vocab_size - 2, (1, args.prefix))
    cache = forward.new_cache()
    forward(prompt, cache)
    point = CacheCheckpoint.take(cache)
    block = torch.full((1, 32), mask)

    def one_forward() -> None:
        forward(block, cache)
        point.restore()

    per_forward = _timed(one_forward, sync, 10)
    print(
        f"one 32-token block forward after {args.prefix} cached tokens: {per_forward * 1e3:.2f} ms "
        f"(floor {FLOOR_SHARED_MS} ms shared experts, {FLOOR_EVEN_MS} ms even routing: "
        f"{per_forward * 1e3 / FLOOR_EVEN_MS:.1f}x the even-routing floor)"
    )
    options = DecodeOptions(
        mask_id=mask, block_size=32, max_new_tokens=32, controls=Controls(), stop_ids=frozenset()
    )
    decoder = BlockDiffusion(forward, options)
    ids = prompt[0].tolist()
    list(decoder.generate(ids))  # warm-up
    sync()
    start = time.perf_counter()
    list(decoder.generate(ids))
    sync()
    whole = time.perf_counter() - start
    stats = decoder.stats
    forwards = stats.step_forwards + stats.commit_forwards
    print(
        f"one block decode through the loop: {whole * 1e3:.1f} ms including the "
        f"{args.prefix}-token prefill; {stats.step_forwards} steps, {forwards} forwards, "
        f"{stats.tokens} tokens"
    )
    if args.device.startswith("cuda"):
        print(
            f"GPU: {torch.cuda.get_device_name()}; "
            f"peak memory {torch.cuda.max_memory_allocated() / 2**30:.1f} GiB"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
