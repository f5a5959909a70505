"""The GPU check's CPU-safe pieces: the Clover-shaped config, full size and shrunk."""

from __future__ import annotations

from pathlib import Path

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
    """The same code path the GPU run takes, on a 1% model: forwards, decodes, batches,
    checks, one table."""
    from bench.gpu_check import main

    argv = ["--scale", "0.01", "--device", "cpu", "--prefix", "64", "--repeat", "1"]
    # Blocks of 4 keep the 4-block decodes short on a CPU; the GPU run uses 32.
    assert main([*argv, "--block-size", "4", "--batch", "1,3"]) == 0
    out = capsys.readouterr().out
    for row in (
        "block forward, all-mask",
        "block forward, random ",
        "block forward, random, expert selection 0.9",
        "one-token forward (autoregressive anchor)",
        "decode 4 blocks, merged commits",
        "decode 4 blocks, commit forwards",
        "decode 4 blocks, expert selection 0.9",
        "16 steps + 0 commits",
        "16 steps + 3 commits",
        "batched decode, N = 1",
        "batched decode, N = 3",
        "break-even tokens per forward",
        "tokens per forward for 515 tok/s",
        "merged commit vs commit forward (state split)",
        "batched row vs the sequence alone",
        "remasking off (peer)",
        "remask_below 0.5, rounds 2",
        "GDN kernel chunk_gated_delta_rule",
        "whole run",
    ):
        assert row in out, (row, out)
    assert "restore after a step" in out and "exact" in out and "NOT EXACT" not in out
    assert "MISMATCH" not in out and "NO EFFECT" not in out and "FAILED" not in out
    assert "experts/layer of 8" in out
    # Every check has its verdict after the table (no time target at 1% on a CPU).
    assert "target a merged commit leaves the state a commit forward leaves: met" in out
    assert "target re-denoising ran, and 0 decodes as off: met" in out
    assert "all 6 targets met" in out


@pytest.mark.slow
def test_gpu_run_unpacks_the_wheels_and_says_why_a_kernel_is_missing(tmp_path: Path) -> None:
    """``gpu_run.sh`` end to end on the CPU, with a stand-in wheel for flash-linear-attention
    (a fake: the real one needs triton and a GPU) whose kernels cannot load here."""
    import shutil
    import subprocess
    import zipfile

    root = Path(__file__).resolve().parents[4]
    tree = tmp_path / "tree"
    shutil.copytree(root, tree, ignore=shutil.ignore_patterns(".venv", ".git", "wheels"))
    wheels = tree / "bench" / "wheels"
    wheels.mkdir()
    with zipfile.ZipFile(wheels / "fla_core-0.0-py3-none-any.whl", "w") as wheel:
        wheel.writestr("fla/__init__.py", "")
        wheel.writestr("fla/ops/__init__.py", "")
        wheel.writestr(
            "fla/ops/gated_delta_rule/__init__.py", "raise ImportError('needs triton (fake)')\n"
        )
    argv = ["--scale", "0.01", "--device", "cpu", "--prefix", "64", "--repeat", "1"]
    done = subprocess.run(
        ["bash", str(tree / "bench" / "gpu_run.sh"), *argv, "--block-size", "4", "--batch", "1"],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "gpu_run: unpacked fla_core-0.0-py3-none-any.whl" in done.stdout
    assert "gpu_run: torch " in done.stdout
    kernel = next(line for line in done.stdout.splitlines() if "chunk_gated_delta_rule" in line)
    assert "torch fallback" in kernel and "needs triton (fake)" in kernel


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
