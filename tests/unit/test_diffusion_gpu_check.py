"""The GPU check's CPU-safe pieces: the Clover-shaped config, full size and shrunk."""

from __future__ import annotations

from bench.gpu_check import clover_config


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
