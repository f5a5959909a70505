"""The parts of ``engine_cpu.py`` about batching, expert selection policies and prefill.

* ``batched``: N sequences decoded together against the same N decoded one
  after another, in the same run; aggregate tokens per second of the
  process's CPU time (the wall time on an idle machine, and the same whatever
  else a shared machine runs), forwards, and in float32
  whether each batched sequence says what it says alone (and how often two
  candidates were within 1e-6 of each other, where float32 may choose either).
* ``policies``: each expert selection policy against selection off, on a
  256-expert top-8 stand-in with peaked and with near-uniform routers: token
  agreement with off and distinct experts per MoE layer per block.
* ``prefill``: the prompt encoded block by block (bidirectional inside each
  aligned block, as SGLang does) against causally, on an 8-layer stand-in.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import torch

import clover_code.engine.local.diffusion.sequence as sequence_module
from clover_code.engine.local.diffusion import Block, BlockDiffusion, Controls, DecodeOptions
from clover_code.engine.local.diffusion.batch import BatchDecoder
from clover_code.engine.local.diffusion.experts import POLICIES, ExpertRouting, find_routers
from clover_code.engine.local.diffusion.forward import HFForward
from clover_code.engine.local.diffusion.rule import low_confidence_step
from tests.tiny_model import build_tiny_checkpoint

BLOCK = 32
TIE = 1e-6


def _load(path: Path, dtype: Any = torch.float32) -> Any:
    from transformers import AutoModelForCausalLM

    return AutoModelForCausalLM.from_pretrained(path, dtype=dtype).eval()


def _prompts(count: int, seed: int = 0) -> list[list[int]]:
    generator = torch.Generator().manual_seed(seed)
    lengths = [200 + 37 * i for i in range(count)]  # every kind of tail block
    return [torch.randint(0, 250, (n,), generator=generator).tolist() for n in lengths]


@contextmanager
def _counting_ties(counter: dict[str, int]) -> Iterator[None]:
    """Count the steps where float rounding could change the rule's choice."""

    def counted(block: torch.Tensor, logits: torch.Tensor, mask_id: int, threshold: float) -> Any:
        fill = low_confidence_step(block, logits, mask_id, threshold)
        masked = block == mask_id
        probs = torch.softmax(logits.float(), dim=-1)[masked]
        top = probs.topk(2, dim=-1).values
        confidence = top[:, 0]
        near = bool(((top[:, 0] - top[:, 1]) < TIE).any())  # two tokens at a position
        near |= bool(((confidence - threshold).abs() < TIE).any())  # at the threshold
        if not bool((confidence > threshold).any()) and confidence.numel() > 1:
            best = confidence.topk(2).values
            near |= bool(best[0] - best[1] < TIE)  # two positions for the one fill
        counter["steps"] += 1
        counter["ties"] += int(near)
        return fill

    original = sequence_module.low_confidence_step
    sequence_module.low_confidence_step = counted  # type: ignore[assignment]
    try:
        yield
    finally:
        sequence_module.low_confidence_step = original


def _run(forward: Any, options: DecodeOptions, prompts: list[list[int]], batch: int) -> Any:
    decoder = BatchDecoder(forward, options, max_batch=batch)
    outs: list[list[int]] = [[] for _ in prompts]

    def sink(k: int) -> Callable[[Any], None]:
        return lambda item: outs[k].extend(item.ids) if isinstance(item, Block) else None

    for k, prompt in enumerate(prompts):
        decoder.add(prompt, sink=sink(k))
    # CPU time of this process (one torch thread): what the decode costs, whatever
    # else the machine runs; on an idle machine it is the wall time.
    start = time.process_time()
    while decoder.step():
        pass
    return outs, time.process_time() - start, decoder.forwards


def batched(
    tmp: Path, sizes: tuple[int, ...] = (1, 2, 4, 8), blocks: int = 4, repeats: int = 3
) -> float:
    """Aggregate tokens per CPU second of N sequences decoded together vs one after another
    (the median of ``repeats`` runs of each, taken in turns); the ratio at N = 4."""
    model = _load(build_tiny_checkpoint(tmp / "batch"))
    forward = HFForward(model)
    options = DecodeOptions(
        mask_id=int(model.config.mask_token_id),
        block_size=BLOCK,
        threshold=1.0,  # never cleared: one position per step, as random weights do anyway
        max_new_tokens=blocks * BLOCK,
        controls=Controls(),
        stop_ids=frozenset(),
    )
    prompts = _prompts(max(sizes))
    _run(forward, options, prompts[:1], 1)  # warm-up
    counter = {"steps": 0, "ties": 0}
    with _counting_ties(counter):
        alone = [_run(forward, options, [prompt], 1)[0][0] for prompt in prompts]
    ratio_at_4 = 0.0
    for n in sizes:
        together_times, alone_times = [], []
        for _ in range(repeats):
            took_alone = 0.0
            forwards_alone = 0
            for prompt in prompts[:n]:
                _, took, forwards = _run(forward, options, [prompt], 1)
                took_alone += took
                forwards_alone += forwards
            alone_times.append(took_alone)
            outs, took, forwards_together = _run(forward, options, prompts[:n], n)
            together_times.append(took)
        tokens = sum(len(o) for o in outs)
        together = tokens / statistics.median(together_times)
        one_by_one = tokens / statistics.median(alone_times)
        ratio = together / one_by_one
        if n == 4:
            ratio_at_4 = ratio
        same = sum(o == a for o, a in zip(outs, alone, strict=False))
        print(
            f"    N={n}: {together:5.0f} tok/s together ({forwards_together} forwards) vs "
            f"{one_by_one:4.0f} one after another ({forwards_alone} forwards): "
            f"{ratio:.2f}x; in float32 {same}/{n} say what they say alone"
        )
    print(
        f"    float32 near ties (two candidates within {TIE:g}) at {counter['ties']} of "
        f"{counter['steps']} rule steps of the {len(prompts)} sequences decoded alone"
    )
    return ratio_at_4


def policies(tmp: Path, expert_scale: float = 8.0) -> None:
    """Token agreement with selection off and distinct experts per layer per block."""
    prompts = _prompts(3, seed=1)
    head = f"{'routers':7} {'policy':6} {'agreement':>9} {'experts/layer/block':>20}"
    print(f"    {head} {'ms/step':>8}")
    for name, scale in (("peaked", 100.0), ("flat", 0.01)):
        path = build_tiny_checkpoint(
            tmp / name, experts=256, top_k=8, router_scale=scale, expert_scale=expert_scale
        )
        model = _load(path)
        forward = HFForward(model)
        options = DecodeOptions(
            mask_id=int(model.config.mask_token_id),
            block_size=BLOCK,
            threshold=0.05,
            max_new_tokens=2 * BLOCK,
            controls=Controls(),
            stop_ids=frozenset(),
        )
        reference: list[list[int]] = []
        for policy in ("off", *POLICIES):
            mass = None if policy == "off" else 0.9
            routing = ExpertRouting(find_routers(model), mass, "block" if mass is None else policy)  # type: ignore[arg-type]
            agree = total = steps = 0
            experts: list[int] = []
            start = time.perf_counter()
            for k, prompt in enumerate(prompts):
                decoder = BlockDiffusion(forward, options, routing)
                items = decoder.generate(prompt)
                tokens = [t for i in items if isinstance(i, Block) for t in i.ids]
                if mass is None:
                    reference.append(tokens)
                agree += sum(a == b for a, b in zip(tokens, reference[k], strict=False))
                total += len(reference[k])
                experts += [n for block in decoder.stats.experts for n in block]
                steps += decoder.stats.step_forwards
            took = time.perf_counter() - start
            routing.remove()
            print(
                f"    {name:7} {policy:6} {agree / total:9.3f} {sum(experts) / len(experts):20.1f} "
                f"{took / steps * 1e3:8.1f}"
            )


def prefill(tmp: Path) -> None:
    """Block-wise against causal prompt encoding: first-block logits and tokens."""
    layers = ("linear", "linear", "linear", "full") * 2
    model = _load(build_tiny_checkpoint(tmp / "eight", layers=layers))
    forward = HFForward(model)
    prompt = _prompts(1, seed=2)[0]
    aligned = len(prompt) // BLOCK * BLOCK
    mask = int(model.config.mask_token_id)
    firsts = []
    for causal in (False, True):
        cache = forward.new_cache()
        forward.prefill(torch.tensor([prompt[:aligned]]), cache, block_size=BLOCK, causal=causal)
        block = prompt[aligned:] + [mask] * (BLOCK - len(prompt) + aligned)
        firsts.append(forward.block(torch.tensor([block]), cache)[0])
    diff = float((firsts[0] - firsts[1]).abs().max())
    scale = float(firsts[0].abs().max())
    tokens = []
    for mode in ("block", "causal"):
        options = DecodeOptions(
            mask_id=mask,
            block_size=BLOCK,
            threshold=0.05,
            max_new_tokens=2 * BLOCK,
            prefill=mode,  # type: ignore[arg-type]
        )
        items = BlockDiffusion(forward, options).generate(prompt)
        tokens.append([t for i in items if isinstance(i, Block) for t in i.ids])
    agree = sum(a == b for a, b in zip(*tokens, strict=False)) / max(len(tokens[0]), 1)
    print(
        f"    8 layers ({layers.count('full')} full attention): first-block logits differ by up "
        f"to {diff:.2e} (max |logit| {scale:.2f}); a 2-block decode agrees on {agree:.0%} "
        "of its tokens"
    )


def main() -> None:
    """Each part on its own (the whole bench is ``engine_cpu.py``)."""
    with tempfile.TemporaryDirectory() as tmp:
        batched(Path(tmp))
        policies(Path(tmp))
        prefill(Path(tmp))


if __name__ == "__main__":
    main()
