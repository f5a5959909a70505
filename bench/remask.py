"""Re-denoising low-confidence positions (``remask_below``): what it costs and what it
changes, on the tiny random stand-in, against decoding with it off in the same run.

For each ``remask_below`` (and ``remask_rounds``) it decodes the same prompts and
prints, against the peer (remasking off, same prompts, same weights): forwards per
block and the extra forwards re-denoising took, positions masked again per block,
and the share of those positions denoised to a different token. It says nothing of
quality: a random model's tokens have no right answer, so no gain is measured here.
The GPU check (``gpu_check.py``) runs ``measure`` on the Clover-shaped model.

Run: python bench/remask.py   (a minute or two on the shared 2-core box)

The exit status is 1 when re-denoising took no extra forward anywhere (it did not
run) or a threshold of 0 decoded differently from off; 0 otherwise.
"""

from __future__ import annotations

import sys
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch

from clover_code.engine.local.diffusion import (
    Block,
    BlockDiffusion,
    Controls,
    DecodeOptions,
)
from clover_code.engine.local.diffusion.forward import HFForward

SETTINGS = ((0.0, 1), (0.1, 1), (0.3, 1), (0.5, 1), (0.5, 2))
"""(remask_below, remask_rounds) measured; (0, 1) is checked to equal off."""


def measure(
    model: Any,
    prompts: Sequence[list[int]],
    options: DecodeOptions,
    add: Callable[[str, str, str], None],
    settings: Sequence[tuple[float, int]] = SETTINGS,
) -> bool:
    """Decode ``prompts`` with remasking off, then at each setting; one row per setting
    through ``add(measure, value, note)``. True when the figures are sound (re-denoising
    ran, and 0 equals off)."""
    forward = HFForward(model)

    def run(below: float, rounds: int) -> tuple[list[list[int]], dict[str, int]]:
        totals = dict.fromkeys(("blocks", "forwards", "rounds", "masked", "changed", "extra"), 0)
        outs = []
        for prompt in prompts:
            opts = replace(options, remask_below=below, remask_rounds=rounds)
            decoder = BlockDiffusion(forward, opts)
            items = list(decoder.generate(prompt))
            blocks = [i for i in items if isinstance(i, Block)]
            outs.append([t for b in blocks for t in b.ids])
            s = decoder.stats
            totals["blocks"] += len(blocks)
            totals["forwards"] += s.forwards
            totals["rounds"] += s.remask_rounds
            totals["masked"] += s.remasked_tokens
            totals["changed"] += s.remask_changed
            totals["extra"] += s.remask_forwards
        return outs, totals

    off, base = run(0.0, 1)
    per_block = base["forwards"] / base["blocks"]
    add("remasking off (peer)", f"{per_block:.2f} forwards/block", f"{base['blocks']} blocks")
    sound = True
    extra_seen = False
    for below, rounds in settings:
        outs, t = run(below, rounds)
        ratio = (t["forwards"] / t["blocks"]) / per_block
        share = t["changed"] / t["masked"] if t["masked"] else 0.0
        same = sum(a == b for a, b in zip(outs, off, strict=True))
        add(
            f"remask_below {below:g}, rounds {rounds}",
            f"{ratio:.2f}x forwards/block",
            f"+{t['extra'] / t['blocks']:.2f} forwards/block, {t['masked'] / t['blocks']:.2f} "
            f"masked again/block in {t['rounds']} rounds, {share:.0%} of them changed; "
            f"{same}/{len(outs)} responses as with it off",
        )
        extra_seen |= t["extra"] > 0
        if below == 0.0 and (outs != off or t["extra"]):
            sound = False
    return sound and extra_seen


def main() -> int:
    from transformers import AutoModelForCausalLM

    from tests.tiny_model import build_tiny_checkpoint

    torch.manual_seed(0)
    with tempfile.TemporaryDirectory() as tmp:
        path = build_tiny_checkpoint(Path(tmp) / "ckpt")
        model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32).eval()
        mask = int(model.config.mask_token_id)
        generator = torch.Generator().manual_seed(5)
        prompts = [torch.randint(3, 250, (n,), generator=generator).tolist() for n in (16, 21)]
        # A low fill threshold, so blocks hold positions filled at several confidences
        # (the random model is never sure: at 0.95 every position would be the fallback's).
        options = DecodeOptions(
            mask_id=mask,
            block_size=8,
            threshold=0.02,
            max_new_tokens=32,
            controls=Controls(repetition_penalty=1.3, presence_penalty=0.4),
        )
        rows: list[tuple[str, str, str]] = []
        with torch.no_grad():
            sound = measure(model, prompts, options, lambda *row: rows.append(row))
    width = max(len(r[0]) for r in rows)
    for name, value, note in rows:
        print(f"{name:<{width}}  {value:<24}  {note}")
    print("verdict:", "ok" if sound else "MISSED (no re-denoising ran, or 0 differed from off)")
    return 0 if sound else 1


if __name__ == "__main__":
    raise SystemExit(main())
