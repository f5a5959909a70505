"""Block-diffusion engine on the tiny Qwen3.5-MoE stand-in, on CPU, in one run.

Prints, each against the named peer measured in the same run:

  (a) the loop's own overhead per denoising step beyond the model forward
      (peer: the bare forward over the same block; target <= 5%);
  (b) cache snapshot + restore versus ``copy.deepcopy`` of the cache after a
      4,096-token prompt (target >= 10x cheaper);
  (c) forwards per generated token with a scripted confident model versus
      plain left-to-right decoding of the same model (one forward per token):
      a figure of the scripted model (always confident), which says nothing of
      a real model's tokens per forward;
  (d) a 4,096-token prompt then 8 blocks, with the same scripted model: time
      to the first committed block;
  (e) block-level expert selection by policy (``expert_select``) on a
      256-expert, top-8 stand-in with peaked and with near-uniform routers:
      token agreement with selection off and distinct experts per MoE layer
      per block (peer: selection off, same prompts, same weights);
  (f) N = 1, 2, 4, 8 sequences decoded together: aggregate tokens/s (of the
      process's CPU time, one torch thread) and forwards against the same N
      decoded one after another (target at N = 4: >= 2.5x), and whether each
      says in float32 what it says alone;
  (g) the prompt encoded block by block against causally (8 layers).

Run: python bench/engine_cpu.py   (a few minutes on the shared 2-core box)

(a), (b) and (f) at N = 4 are targets: each is printed with its verdict, and
the exit status is 0 when all are met, 1 when one is missed.
"""

from __future__ import annotations

import copy
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch

from bench.engine_cpu_batch import batched, policies, prefill
from bench.targets import Targets
from clover_code.engine.local.diffusion import Block, BlockDiffusion, Controls, DecodeOptions
from clover_code.engine.local.diffusion.forward import HFForward
from clover_code.engine.local.diffusion.state import CacheCheckpoint
from tests.tiny_model import ScriptedLogits, build_tiny_checkpoint, peaked

BLOCK = 32
PROMPT = 4096
BATCH_TARGET = 2.5
"""Aggregate tokens/s of 4 sequences decoded together over the same 4 one after another."""


def _median(samples: list[float]) -> float:
    return statistics.median(samples)


def main() -> int:
    """Run the four measurements and print them."""
    torch.set_num_threads(1)
    from transformers import AutoModelForCausalLM
    from transformers.utils import logging

    logging.set_verbosity_error()
    with tempfile.TemporaryDirectory() as tmp:
        path = build_tiny_checkpoint(Path(tmp) / "tiny")
        model = AutoModelForCausalLM.from_pretrained(path).eval()
    forward = HFForward(model)
    mask = int(model.config.mask_token_id)
    vocab = forward.vocab_size
    prompt = [
        int(x) for x in torch.randint(0, 250, (PROMPT,), generator=torch.Generator().manual_seed(0))
    ]

    # (a) threshold 1.0: never cleared, so one position per step, 32 steps per block
    # (two blocks: the second also pays the repetition penalty),
    # each a real model forward plus the loop's own work.
    short = prompt[:256]
    inner_times: list[float] = []

    class Timed:
        vocab_size = forward.vocab_size
        device = forward.device
        splits = forward.splits

        def new_cache(self) -> Any:
            return forward.new_cache()

        def cache_length(self, cache: Any) -> int:
            return forward.cache_length(cache)

        def mid_states(self) -> Any:
            return forward.mid_states()

        def __call__(
            self, ids: torch.Tensor, cache: Any, layout: Any, keep: int | None = None
        ) -> torch.Tensor:
            start = time.perf_counter()
            out = forward(ids, cache, layout, keep)
            inner_times.append(time.perf_counter() - start)
            return out

    options = DecodeOptions(mask_id=mask, block_size=BLOCK, max_new_tokens=2 * BLOCK, threshold=1.0)
    decoder = BlockDiffusion(Timed(), options)
    overheads, model_times = [], []
    for _ in range(5):
        inner_times.clear()
        start = time.perf_counter()
        list(decoder.generate(short))
        total = time.perf_counter() - start
        overheads.append(total - sum(inner_times))
        model_times.append(sum(inner_times))
    steps = decoder.stats.step_forwards
    overhead = _median(overheads) / _median(model_times)
    print(
        f"(a) loop overhead per step: {overhead * 100:.1f}% of the forward "
        f"({_median(overheads) / steps * 1e3:.2f} ms vs "
        f"{_median(model_times) / steps * 1e3:.2f} ms "
        f"per step, {steps} steps; target <= 5%)"
    )
    targets = Targets()
    targets.check(
        "(a) loop overhead <= 5% of the forward",
        overhead <= 0.05,
        f"{overhead * 100:.1f}%: {_median(overheads) / steps * 1e3:.2f} ms vs "
        f"{_median(model_times) / steps * 1e3:.2f} ms per step",
    )

    # (b) snapshot + restore vs deepcopy, after a 4,096-token prefill.
    cache = forward.new_cache()
    forward.prefill(torch.tensor([prompt]), cache)
    takes, restores, theirs = [], [], []
    point = CacheCheckpoint.take(cache)
    for _ in range(50):
        start = time.perf_counter()
        copy.deepcopy(cache)
        theirs.append(time.perf_counter() - start)
        start = time.perf_counter()
        point = point.retake(cache)
        mid = time.perf_counter()
        point.restore()
        takes.append(mid - start)
        restores.append(time.perf_counter() - mid)
    ours = _median(takes) + _median(restores)
    print(
        f"(b) snapshot {_median(takes) * 1e6:.0f} us (once per block) + restore "
        f"{_median(restores) * 1e6:.0f} us (per step) vs deepcopy {_median(theirs) * 1e6:.0f} us: "
        f"{_median(theirs) / ours:.0f}x cheaper per step even when every step snapshots "
        "(target >= 10x)"
    )
    cheaper = _median(theirs) / ours
    targets.check(
        "(b) snapshot + restore >= 10x cheaper than deepcopy",
        cheaper >= 10,
        f"{cheaper:.0f}x: {ours * 1e6:.0f} us vs {_median(theirs) * 1e6:.0f} us",
    )

    # (c) forwards per token: confident scripted model vs left-to-right.
    def confident(ids: torch.Tensor, before: int) -> torch.Tensor:
        return peaked(vocab, [(40 + (before + i) % 50, 0.99) for i in range(ids.shape[1])])

    conf = BlockDiffusion(
        ScriptedLogits(forward, confident),
        DecodeOptions(
            mask_id=mask,
            block_size=BLOCK,
            max_new_tokens=8 * BLOCK,
            controls=Controls(repetition_penalty=1.0),
        ),
    )
    list(conf.generate(short))
    stats = conf.stats
    per_token = (stats.step_forwards + stats.commit_forwards) / stats.tokens
    print(
        f"(c) scripted model: forwards per token: {per_token:.3f} (block diffusion) vs 1.000 "
        f"(left-to-right): {1 / per_token:.1f}x fewer forwards, "
        f"{stats.tokens_per_forward:.1f} tokens/forward (an always-confident fake: no target)"
    )

    # (d) 4,096-token prompt then 8 blocks: time to first committed block.
    eight = BlockDiffusion(
        ScriptedLogits(forward, confident),
        DecodeOptions(mask_id=mask, block_size=BLOCK, max_new_tokens=8 * BLOCK),
    )
    start = time.perf_counter()
    first = None
    for item in eight.generate(prompt):
        if isinstance(item, Block) and first is None:
            first = time.perf_counter() - start
    whole = time.perf_counter() - start
    ar_start = time.perf_counter()
    ar_cache = forward.new_cache()
    forward.prefill(torch.tensor([prompt]), ar_cache, causal=True)
    for i in range(8 * BLOCK):
        forward.prefill(torch.tensor([[40 + i % 50]]), ar_cache, causal=True)
    ar = time.perf_counter() - ar_start
    print(
        f"(d) scripted model, 4,096-token prompt + 8 blocks: first block after "
        f"{first * 1e3:.0f} ms, all 8 after "
        f"{whole * 1e3:.0f} ms vs {ar * 1e3:.0f} ms left-to-right for the same 256 tokens"
    )
    with tempfile.TemporaryDirectory() as tmp:
        print("(e) expert selection at 0.9, by policy, against off (256 experts, top-8):")
        policies(Path(tmp))
        print("(f) N sequences decoded together vs one after another (4 blocks each):")
        ratio = batched(Path(tmp))
        print("(g) prompt encoding, block by block (SGLang's dLLM extend mode) vs causal:")
        prefill(Path(tmp))
    targets.check(
        f"(f) {BATCH_TARGET}x sequential at N = 4",
        ratio >= BATCH_TARGET,
        f"{ratio:.2f}x: aggregate tokens/s of 4 decoded together vs one after another",
    )
    return targets.exit_status()


if __name__ == "__main__":
    raise SystemExit(main())
