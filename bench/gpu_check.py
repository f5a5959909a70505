"""GPU check: a full-size Clover-shaped model with random bf16 weights, on one GPU.

Needs one H200-class GPU (about 70 GB for the weights), torch and
transformers; downloads nothing. ``bench/gpu_run.sh`` runs it in one command
on a bare machine (it puts the flash-linear-attention wheels of
``bench/wheels/`` on the path when they are there). Builds
``Qwen3_5MoeForCausalLM`` with Clover-35B-A3B's shape (40 layers, hybrid
Gated DeltaNet + full attention, 256 routed experts, top-8, one shared
expert) and measures, on top of a cached prefix, with the engine's own
forward (block-causal attention):

  * one 32-token block forward of an all-mask block and of a random-token
    block (identical mask tokens route alike; real text does not), with the
    distinct routed experts per MoE layer of each, and the same random block
    with block-level expert selection at 0.9;
  * the autoregressive anchor: a one-token forward on the same weights and
    cache, giving the break-even tokens per forward (a block forward costs
    that many one-token forwards) and the tokens per forward needed to match
    the vendor's 515 tok/s on H200;
  * a decode of several blocks through the loop: commits merged into the next
    block's first forward, commits as forwards of their own, and expert
    selection at 0.9;
  * N = 1, 4, 8 sequences decoded together: aggregate tokens/s against N = 1;
  * re-denoising (``remask.py``): extra forwards per block and the share of
    remasked positions that change, against remasking off (no quality figure);
  * which Gated DeltaNet kernels ran (flash-linear-attention and causal-conv1d,
    or transformers' torch fallbacks, with one line saying why);
  * correctness in the run's dtype (``gpu_check_correct.py``).

Random weights give near-uniform confidences, so decoding takes the
one-position-per-step fallback (32 steps a block): the per-forward times are
the figures to read, not the tokens per forward. Prints one table.

Run: bash bench/gpu_run.sh   (target: the whole run under 5 minutes, build included)
Put the figures in bench/README.md with the date and the GPU. After the
table, each check (the correctness checks, every part having run; on a GPU
at full size, the time target) is printed with its verdict; the exit status
is 0 when all pass, 1 when one fails, 3 without a GPU.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

VENDOR_TOKENS_PER_S = 515.0
"""The vendor's published Clover decoding speed on one H200."""
BLOCK = 32
WHOLE_RUN_S = 300.0
"""The whole run, model build included, on one H200: a rerun fits the GPU budget."""


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


def kernel_paths(model: Any) -> dict[str, str]:
    """Per Gated DeltaNet kernel: the fast package it runs on, or "torch fallback".

    Reads the choice transformers made when it wrapped each function (its
    ``is_new_implementation`` flag); "unknown" where that cannot be read.
    """
    module = sys.modules[type(model).__module__]
    paths: dict[str, str] = {}
    for name in dir(module):
        fn = getattr(module, name)
        code = getattr(fn, "__code__", None)
        if code is None or "is_new_implementation" not in code.co_freevars:
            continue
        cells = dict(zip(code.co_freevars, fn.__closure__ or (), strict=False))
        kernel = cells["func_name"].cell_contents if "func_name" in cells else name
        package = cells["package"].cell_contents if "package" in cells else "?"
        fast = cells["is_new_implementation"].cell_contents
        paths[str(kernel)] = str(package) if fast else "torch fallback"
    return paths or {"gated delta rule": "unknown"}


def fla_problem() -> str | None:
    """Why flash-linear-attention's kernels cannot be used here, or None when they can."""
    try:
        import fla.ops.gated_delta_rule  # noqa: F401
    except Exception as exc:
        return f"{type(exc).__name__}: {' '.join(str(exc).split())[:160]}"
    return None


class Table:
    """Rows of (measure, value, note), printed as one table at the end; each row is also
    said on stderr as it comes, so a run cut short still shows what it measured."""

    def __init__(self) -> None:
        self.rows: list[tuple[str, str, str]] = []

    def add(self, measure: str, value: str, note: str = "") -> None:
        self.rows.append((measure, value, note))
        print(f"gpu_check: {measure}: {value} {note}".rstrip(), file=sys.stderr, flush=True)

    def print(self) -> None:
        width = max(len(r[0]) for r in self.rows)
        value_width = max(len(r[1]) for r in self.rows)
        for measure, value, note in self.rows:
            print(f"{measure:<{width}}  {value:>{value_width}}  {note}".rstrip())


def main(argv: list[str] | None = None) -> int:
    """Build, measure, check, print the table."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--scale", type=float, default=1.0, help="shrink the model (tests)")
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--prefix", type=int, default=1024)
    parser.add_argument("--blocks", type=int, default=4, help="blocks to decode (at least 4)")
    parser.add_argument("--repeat", type=int, default=10)
    parser.add_argument("--block-size", type=int, default=BLOCK, help="smaller for tests")
    parser.add_argument("--batch", default="1,4,8", help="batch sizes to decode together")
    args = parser.parse_args(argv)
    sizes = tuple(int(n) for n in args.batch.split(","))
    import torch

    if args.device.startswith("cuda") and not torch.cuda.is_available():
        print("gpu_check: no CUDA GPU is visible; run it on the GPU machine.", file=sys.stderr)
        return 3
    began = time.perf_counter()
    cuda = args.device.startswith("cuda")
    dtype = torch.bfloat16 if cuda else torch.float32
    sync: Callable[[], None] = torch.cuda.synchronize if cuda else (lambda: None)
    config = clover_config(args.scale)
    start = time.perf_counter()
    model = build_model(config, args.device, dtype)
    params = sum(p.numel() for p in model.parameters())
    size = f"{params / 1e9:.2f}B" if params >= 1e9 else f"{params / 1e6:.1f}M"
    table = Table()
    table.add("model", f"{size} params", f"{str(dtype).removeprefix('torch.')}, random weights")
    table.add("build", f"{time.perf_counter() - start:.0f} s")
    from bench.gpu_check_correct import correctness
    from bench.gpu_check_measure import batched, decode, forwards, rate_text, remasking

    failed: list[str] = []
    figures: dict[str, float] = {}
    with torch.no_grad():
        bs = args.block_size
        checks: dict[str, bool] = {}
        steps: list[tuple[str, Callable[[], Any]]] = [
            (
                "block forwards",
                lambda: figures.update(
                    forwards(model, config, args.prefix, args.repeat, sync, table, bs)
                ),
            ),
            (
                "4-block decode",
                lambda: decode(model, config, args.prefix, max(4, args.blocks), sync, table, bs),
            ),
            (
                "batched decode",
                lambda: batched(model, config, args.prefix, sizes, sync, table, bs),
            ),
            (
                "re-denoising",
                lambda: checks.update(remasking(model, config, args.prefix, sync, table, bs)),
            ),
            ("correctness", lambda: checks.update(correctness(model, config, table, bs))),
        ]
        for name, step in steps:
            try:
                step()
            except Exception as exc:  # the rest still runs, and the table still prints
                failed.append(name)
                detail = " ".join(str(exc).split())[:200]
                table.add("FAILED", type(exc).__name__, detail)
    missing = fla_problem()
    for kernel, path in sorted(kernel_paths(model).items()):
        why = f"flash-linear-attention: {missing}" if missing and path == "torch fallback" else ""
        table.add(f"GDN kernel {kernel}", path, why if "gated_delta" in kernel else "")
    if "one" in figures:
        one, block = figures["one"], figures["random"]
        table.add("break-even tokens per forward", f"{block / one:.2f}", "block forward / 1-token")
        table.add("autoregressive anchor", f"{rate_text(1 / one)} tok/s", "one token per forward")
        table.add(
            f"tokens per forward for {VENDOR_TOKENS_PER_S:.0f} tok/s",
            f"{VENDOR_TOKENS_PER_S * block:.1f}",
            "at the random-block forward time (vendor: 515 tok/s on H200)",
        )
        for k in (2, 4, 8):
            table.add(
                f"projected at {k} tokens/forward",
                f"{rate_text(k / block)} tok/s",
                f"beside the vendor's {VENDOR_TOKENS_PER_S:.0f}",
            )
    table.add("block size", str(args.block_size))
    if cuda:
        table.add("GPU", torch.cuda.get_device_name())
        table.add("peak memory", f"{torch.cuda.max_memory_allocated() / 2**30:.1f} GiB")
    whole = time.perf_counter() - began
    table.add("whole run", f"{whole:.0f} s", f"target < {WHOLE_RUN_S:.0f} s on one H200")
    table.print()
    from bench.targets import Targets

    targets = Targets()
    for name in failed:
        targets.check(f"the {name} ran", False, "see FAILED in the table")
    for name, passed in checks.items():
        targets.check(name, passed, "ok" if passed else "see the table")
    if cuda and args.scale == 1.0:
        # The time target is for the full-size model on a GPU, not the scaled-down test runs.
        targets.check(
            f"whole run < {WHOLE_RUN_S:.0f} s on one GPU", whole < WHOLE_RUN_S, f"{whole:.0f} s"
        )
    return targets.exit_status()


if __name__ == "__main__":
    raise SystemExit(main())
