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
    """The same code path the GPU run takes, on a 1% model: forwards, decode, checks, table."""
    from bench.gpu_check import main

    argv = ["--scale", "0.01", "--device", "cpu", "--prefix", "64", "--repeat", "1"]
    # Blocks of 4 keep the 4-block decode short on a CPU; the GPU run uses 32.
    assert main([*argv, "--block-size", "4"]) == 0
    out = capsys.readouterr().out
    for row in (
        "block forward, all-mask",
        "block forward, random ",
        "block forward, random, expert selection 0.9",
        "one-token forward (autoregressive anchor)",
        "decode 4 blocks, expert selection off",
        "decode 4 blocks, expert selection 0.9",
        "3 commits",
        "break-even tokens per forward",
        "tokens per forward for 515 tok/s",
        "GDN kernel chunk_gated_delta_rule",
    ):
        assert row in out, (row, out)
    assert "restore after a step" in out and "exact" in out and "NOT EXACT" not in out
    assert "MISMATCH" not in out and "NO EFFECT" not in out
    assert "experts/layer of 8" in out


def test_kernel_paths_say_the_torch_fallback_here() -> None:
    import torch

    from bench.gpu_check import build_model, clover_config, kernel_paths

    paths = kernel_paths(build_model(clover_config(0.01), "cpu", torch.float32))
    fast = {"fla", "causal_conv1d"}
    assert set(paths) >= {"chunk_gated_delta_rule", "causal_conv1d_fn"}
    for kernel, path in paths.items():
        assert path == "torch fallback" or path in fast, (kernel, path)


@pytest.mark.skipif(_has_cuda(), reason="a GPU is visible: the real check would run")
def test_without_a_gpu_it_says_so(capsys: pytest.CaptureFixture[str]) -> None:
    from bench.gpu_check import main

    assert main([]) == 3
    assert "no CUDA GPU is visible" in capsys.readouterr().err
