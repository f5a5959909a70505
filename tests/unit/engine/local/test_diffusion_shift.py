"""logits_shift: none (position i predicts token i) or one (i predicts i + 1), both ways."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import torch

from clover_code.engine.local.diffusion import Block, BlockDiffusion, Controls, DecodeOptions
from clover_code.engine.local.diffusion.forward import HFForward
from clover_code.engine.local.hf import HFBackend, HFOptions
from tests.tiny_model import ScriptedLogits, build_tiny_checkpoint, peaked

NO_CONTROLS = Controls(repetition_penalty=1.0, end_bias_per_1k=0.0, think_bias_per_1k=0.0)
PROMPT = list(range(3, 40))  # 37 tokens: 32 prefilled, 5 head the first block


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_checkpoint(tmp_path_factory.mktemp("tiny") / "ckpt")


def _token(position: int) -> int:
    return 40 + position % 50


def _decode(checkpoint: Path, *, model_shifts: bool, shift: bool) -> list[int]:
    """Decode 3 blocks of 8 with a scripted model that does or does not shift."""
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(checkpoint).eval()
    forward = HFForward(model)

    def script(ids: torch.Tensor, before: int) -> torch.Tensor:
        ahead = 1 if model_shifts else 0
        rows = [(_token(before + i + ahead), 0.99) for i in range(ids.shape[1])]
        return peaked(forward.vocab_size, rows)

    options = DecodeOptions(
        mask_id=265, block_size=8, max_new_tokens=19, controls=NO_CONTROLS, logits_shift=shift
    )
    items = BlockDiffusion(ScriptedLogits(forward, script), options).generate(PROMPT)
    return [t for item in items if isinstance(item, Block) for t in item.ids]


@pytest.mark.parametrize("model_shifts", [False, True])
def test_the_switch_aligns_both_kinds_of_model(checkpoint: Path, model_shifts: bool) -> None:
    expected = [_token(len(PROMPT) + i) for i in range(19)]
    assert _decode(checkpoint, model_shifts=model_shifts, shift=model_shifts) == expected
    misread = _decode(checkpoint, model_shifts=model_shifts, shift=not model_shifts)
    assert misread != expected


def _with_config_key(checkpoint: Path, tmp_path: Path, value: Any) -> Path:
    path = tmp_path / "ckpt"
    shutil.copytree(checkpoint, path)
    cfg = json.loads((path / "config.json").read_text())
    cfg["logits_shift"] = value
    (path / "config.json").write_text(json.dumps(cfg))
    return path


def test_the_checkpoint_config_says_one_and_the_setting_overrides(
    checkpoint: Path, tmp_path: Path
) -> None:
    path = _with_config_key(checkpoint, tmp_path, "one")
    backend = HFBackend(str(path), HFOptions())
    assert backend.logits_shift is True
    said = [line for line in backend.notices if "shifted by one" in line]
    assert said and "checkpoint's config" in said[0]
    assert HFBackend(str(path), HFOptions(logits_shift="none")).logits_shift is False
    plain = HFBackend(str(checkpoint), HFOptions())
    assert plain.logits_shift is False
    assert not any("shifted" in line for line in plain.notices)
    assert HFBackend(str(checkpoint), HFOptions(logits_shift="one")).logits_shift is True
