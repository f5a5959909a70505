"""The GPU check's CPU-safe pieces: the Clover-shaped config, full size and shrunk."""

from __future__ import annotations

import pytest

from bench.gpu_check import clover_config


def _has_cuda() -> bool:
    import torch

    return bool(torch.cuda.is_available())


def test_full_size_config_is_clover_shaped() -> None:
    config = clover_config()
    assert config.num_hidden_layers == 40 and config.num_experts == 256
    assert config.num_experts_per_tok == 8 and config.hidden_size == 2048
    assert config.layer_types.count("full_attention") == 10
    assert config.mask_token_id == config.vocab_size - 1


def test_small_scale_keeps_the_hybrid_shape() -> None:
    config = clover_config(0.01)
    assert config.num_hidden_layers == 4 and config.layer_types[-1] == "full_attention"
    assert config.num_experts >= config.num_experts_per_tok


def test_the_whole_check_runs_shrunk_on_the_cpu(capsys: pytest.CaptureFixture[str]) -> None:
    """The same code path the GPU run takes, on a 1% model: build, block forward, decode."""
    from bench.gpu_check import main

    assert main(["--scale", "0.01", "--device", "cpu", "--prefix", "64"]) == 0
    out = capsys.readouterr().out
    assert "one 32-token block forward after 64 cached tokens" in out
    assert "one block decode through the loop" in out and "32 tokens" in out


@pytest.mark.skipif(_has_cuda(), reason="a GPU is visible: the real check would run")
def test_without_a_gpu_it_says_so(capsys: pytest.CaptureFixture[str]) -> None:
    from bench.gpu_check import main

    assert main([]) == 3
    assert "no CUDA GPU is visible" in capsys.readouterr().err
