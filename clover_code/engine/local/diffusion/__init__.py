"""Block-diffusion decoding in torch: the loop (several sequences per forward), its fill rule,
cache checkpoints, controls."""

from clover_code.engine.local.diffusion.controls import Controls
from clover_code.engine.local.diffusion.loop import (
    Block,
    BlockDiffusion,
    DecodeOptions,
    DecodeStats,
    Step,
)

__all__ = ["Block", "BlockDiffusion", "Controls", "DecodeOptions", "DecodeStats", "Step"]
