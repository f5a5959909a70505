"""Block-diffusion decoding over a torch model with a hybrid cache: options, results, one
sequence at a time.

The response is generated in blocks of ``block_size`` positions aligned to
absolute positions (as SGLang does: the prompt's last partial block is the
head of the first generated block). The prompt's whole blocks are encoded
first (``prefill``: block by block with bidirectional attention inside each
block, as SGLang's dLLM extend mode does, or causally). A block starts with
its free positions masked; each denoising step runs the model over the block
on top of the cached prefix and applies the ``LowConfidence`` rule
(``rule.py``). A step leaves no trace in the cache (``state.py``). A
finished block becomes prefix for the next: its keys/values and
linear-attention state are written by the next block's first forward, which
carries the finished block and the new one (``split.py`` keeps the state
between them), so a block costs its denoising steps and no extra forward.

A stop token ends the response inside a block as soon as every position
before it is filled; ``max_new_tokens`` and the context window cut the last
block, which then denoises only the positions it needs.

``BlockDiffusion`` decodes one sequence; ``batch.BatchDecoder`` decodes
several in the same forwards, and this class is that decoder with one row.
The loop is synchronous and yields ``Step`` and ``Block`` results; backends
run it in a worker thread.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from clover_code.engine.local.diffusion.batch import BatchDecoder
from clover_code.engine.local.diffusion.experts import ExpertRouting
from clover_code.engine.local.diffusion.forward import ModelForward
from clover_code.engine.local.diffusion.options import (
    Block,
    BlockFinish,
    DecodeOptions,
    DecodeStats,
    PrefillMode,
    Step,
    check_prompt,
)

__all__ = [
    "Block",
    "BlockDiffusion",
    "BlockFinish",
    "DecodeOptions",
    "DecodeStats",
    "PrefillMode",
    "Step",
    "check_prompt",
]


class BlockDiffusion:
    """Generates one response block by block with ``forward``."""

    def __init__(
        self, forward: ModelForward, options: DecodeOptions, routing: ExpertRouting | None = None
    ) -> None:
        if not 0.0 <= options.threshold <= 1.0:
            raise ValueError("threshold must be between 0 and 1")
        self.forward = forward
        self.options = options
        self.routing = routing
        """Hooks on the model's MoE routers: experts counted per block, and restricted
        to the block's kept set when expert selection is on (``experts.py``)."""
        self.stats = DecodeStats()

    def generate(
        self, prompt: list[int], cancelled: Callable[[], bool] = lambda: False
    ) -> Iterator[Step | Block]:
        """Yield a ``Step`` per denoising step and a ``Block`` per finished block."""
        decoder = BatchDecoder(self.forward, self.options, self.routing, max_batch=1)
        out: list[Step | Block] = []
        sequence = decoder.add(prompt, sink=out.append, cancelled=cancelled)
        self.stats = sequence.stats
        try:
            while decoder.step():
                yield from out
                out.clear()
            yield from out
        finally:
            decoder.close()
