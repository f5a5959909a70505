"""decoder = auto | checkpoint | builtin: the checkpoint's own entry point first, explicitly."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

from clover_code.engine.base import ChatRequest, EngineWarning
from clover_code.engine.events import BlockCommitted, BlockDraft, Failed, Finished
from clover_code.engine.local.hf import HFBackend, HFOptions
from clover_code.errors import EngineUnavailable
from tests.tiny_model import KWARGS_DECODER, add_remote_decoder, build_tiny_checkpoint


@pytest.fixture(scope="module")
def plain(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_checkpoint(tmp_path_factory.mktemp("plain") / "ckpt")


@pytest.fixture(scope="module")
def shipped(plain: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("shipped") / "ckpt"
    shutil.copytree(plain, path)
    return add_remote_decoder(path)


@pytest.fixture(scope="module")
def kwargs_only(plain: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("kwargs") / "ckpt"
    shutil.copytree(plain, path)
    return add_remote_decoder(path, KWARGS_DECODER)


async def _collect(backend: HFBackend, request: ChatRequest) -> list[Any]:
    return [event async for event in backend.stream(request)]


def _calls(backend: HFBackend) -> list[dict[str, Any]]:
    module = sys.modules[type(backend._model).__module__]
    calls: list[dict[str, Any]] = module.CALLS
    return calls


async def test_auto_uses_the_shipped_entry_point_with_our_settings(shipped: Path) -> None:
    options = HFOptions(block_size=4, threshold=0.5, max_tokens=12, stop_strings=("zz",))
    backend = HFBackend(str(shipped), options)
    assert backend.decoder.kind == "checkpoint"
    assert backend.notices == [backend.decoder.notice()]
    assert "checkpoint's own diffusion_generate" in backend.notices[0]
    events = await _collect(backend, ChatRequest([{"role": "user", "content": "hi"}]))
    assert not [e for e in events if isinstance(e, Failed)], events
    call = _calls(backend)[-1]
    assert call["threshold"] == 0.5
    assert call["block_length"] == 4
    assert call["mask_token_id"] == backend.mask_id
    assert call["stop_strings"] == ["zz"]
    assert call["repetition_penalty"] == backend.controls.repetition_penalty
    assert call["max_new_tokens"] == 12
    assert [e for e in events if isinstance(e, BlockDraft)]
    assert [e for e in events if isinstance(e, BlockCommitted)]
    assert isinstance(events[-1], Finished)
    # The biases have no parameter there: said at load, not dropped silently.
    assert "end_bias_per_1k" in backend.notices[0]


async def test_builtin_runs_our_loop_even_when_the_checkpoint_ships_one(shipped: Path) -> None:
    backend = HFBackend(str(shipped), HFOptions(block_size=4, max_tokens=8, decoder="builtin"))
    assert backend.decoder.kind == "builtin"
    assert "clover-code's block-diffusion loop" in backend.notices[0]
    before = len(_calls(backend))
    events = await _collect(backend, ChatRequest([{"role": "user", "content": "hi"}]))
    assert isinstance(events[-1], Finished) and events[-1].reason != "error"
    assert len(_calls(backend)) == before


def test_auto_without_an_entry_point_runs_our_loop_and_says_why(plain: Path) -> None:
    backend = HFBackend(str(plain), HFOptions(block_size=4))
    assert backend.decoder.kind == "builtin"
    assert "has no diffusion_generate" in backend.notices[0]


def test_checkpoint_without_an_entry_point_is_one_clear_error(plain: Path) -> None:
    with pytest.raises(EngineUnavailable, match="decoder = checkpoint, but"):
        HFBackend(str(plain), HFOptions(decoder="checkpoint"))


async def test_a_kwargs_only_entry_point_is_not_taken(kwargs_only: Path) -> None:
    backend = HFBackend(str(kwargs_only), HFOptions(block_size=4, max_tokens=8))
    assert backend.decoder.kind == "builtin"
    assert "names no generation_tokens_hook_func" in backend.notices[0]
    events = await _collect(backend, ChatRequest([{"role": "user", "content": "hi"}]))
    assert not [e for e in events if isinstance(e, Failed)], events
    with pytest.raises(EngineUnavailable, match="names no generation_tokens_hook_func"):
        HFBackend(str(kwargs_only), HFOptions(decoder="checkpoint"))


async def test_the_choice_is_said_once_at_load(shipped: Path) -> None:
    from clover_code.config.settings import Settings
    from clover_code.engine.select import open_backend

    heard: list[str] = []
    settings = Settings(engine="hf", model_path=str(shipped), decoder="auto")
    backend = await open_backend(settings, heard.append)
    try:
        said = [line for line in heard if "Decoding with" in line]
        assert said == [backend.status()[0]]  # type: ignore[attr-defined]
    finally:
        await backend.aclose()


def test_expert_selection_the_entry_point_cannot_take_is_named(shipped: Path) -> None:
    backend = HFBackend(str(shipped), HFOptions(expert_mass=0.9))
    assert backend.decoder.kind == "checkpoint"
    assert "expert_mass" in backend.decoder.not_applied
    assert "expert_mass" in backend.notices[0]


def _scripted_rows(backend: HFBackend, row: Any) -> dict[str, int]:
    """Replace the logits of the generated positions with ``row(r) -> (token, p)`` (r counted
    from the response's start); returns a counter of the forwards over them."""
    import torch

    from tests.tiny_model import peaked

    model = backend._model
    real = model.forward
    seen = {"forwards": 0, "prompt": 0}
    original_prompt = backend.prompt

    def prompt(request: Any) -> list[int]:
        ids = original_prompt(request)
        seen["prompt"] = len(ids)
        return ids

    def forward(*args: Any, **kwargs: Any) -> Any:
        out = real(*args, **kwargs)
        n = out.logits.shape[1]
        if n > seen["prompt"]:
            seen["forwards"] += 1
            rows = [row(p - seen["prompt"]) if p >= seen["prompt"] else (5, 0.5) for p in range(n)]
            out.logits = peaked(int(model.config.vocab_size), rows).to(torch.float32)
        return out

    model.forward = forward
    backend.prompt = prompt  # type: ignore[method-assign]
    return seen


async def test_the_entry_point_counts_one_step_per_forward_on_aligned_blocks(
    shipped: Path,
) -> None:
    backend = HFBackend(str(shipped), HFOptions(block_size=4, threshold=0.95, max_tokens=12))
    seen = _scripted_rows(backend, lambda r: (70 + r % 20, 0.5))
    events = await _collect(backend, ChatRequest([{"role": "user", "content": "hi"}]))
    blocks = [e for e in events if isinstance(e, BlockCommitted)]
    head = seen["prompt"] % 4
    sizes = [4 - head] if head else []
    sizes += [4] * ((12 - sum(sizes)) // 4)
    if sum(sizes) < 12:
        sizes.append(12 - sum(sizes))
    assert [b.token_count for b in blocks] == sizes  # aligned to absolute positions
    # One position per forward: a block's steps are its positions, and all add up.
    assert [b.steps for b in blocks] == sizes
    assert sum(b.steps or 0 for b in blocks) == seen["forwards"]
    drafts = [e for e in events if isinstance(e, BlockDraft)]
    assert [d.step for d in drafts if d.block == 1] == list(range(1, sizes[1] + 1))


async def test_the_entry_point_stops_before_its_block_is_complete(shipped: Path) -> None:
    backend = HFBackend(str(shipped), HFOptions(block_size=4, threshold=0.95, max_tokens=12))
    stop = int(backend.tokenizer.convert_tokens_to_ids("<|im_end|>"))
    seen = _scripted_rows(backend, lambda r: (stop, 0.9) if r == 1 else (70, 0.5 - 0.01 * r))
    events = await _collect(backend, ChatRequest([{"role": "user", "content": "hi"}]))
    blocks = [e for e in events if isinstance(e, BlockCommitted)]
    assert sum(b.token_count for b in blocks) == 1
    assert events[-1] == Finished("stop")
    assert seen["forwards"] == 2  # the stop's block was never filled to the end


@pytest.fixture(scope="module")
def cacheless(plain: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    from tests.tiny_model import CACHELESS_FORWARD

    path = tmp_path_factory.mktemp("cacheless") / "ckpt"
    shutil.copytree(plain, path)
    return add_remote_decoder(path, CACHELESS_FORWARD)


@pytest.fixture(scope="module")
def cacheless_generate(plain: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    from tests.tiny_model import CACHELESS_GENERATE

    path = tmp_path_factory.mktemp("cacheless_generate") / "ckpt"
    shutil.copytree(plain, path)
    return add_remote_decoder(path, CACHELESS_GENERATE)


def test_a_remote_forward_that_passes_the_self_test_runs_our_loop(kwargs_only: Path) -> None:
    from clover_code.engine.local.diffusion.selftest import forward_problem, is_stock

    backend = HFBackend(str(kwargs_only), HFOptions(block_size=4))
    assert not is_stock(backend._model)
    assert forward_problem(backend._model, backend.mask_id) is None
    assert backend.decoder.kind == "builtin"


async def test_a_remote_forward_that_fails_it_runs_the_checkpoints_generate_without_drafts(
    cacheless_generate: Path,
) -> None:
    backend = HFBackend(str(cacheless_generate), HFOptions(block_size=4, max_tokens=8))
    assert backend.decoder.kind == "generate"
    said = backend.notices[0]
    assert "without drafts" in said and "cached block forward does not equal" in said
    assert len([n for n in backend.notices if "without drafts" in n]) == 1
    events = await _collect(backend, ChatRequest([{"role": "user", "content": "hi"}]))
    assert not [e for e in events if isinstance(e, BlockDraft | Failed)], events
    assert sum(e.token_count for e in events if isinstance(e, BlockCommitted)) == 8
    assert events[-1] == Finished("length")


def test_a_remote_forward_that_fails_it_with_nothing_else_is_one_sentence(
    cacheless: Path, cacheless_generate: Path
) -> None:
    with pytest.raises(EngineUnavailable, match="cannot decode the checkpoint") as info:
        HFBackend(str(cacheless), HFOptions(block_size=4))
    assert "\n" not in str(info.value) and "cached block forward" in str(info.value)
    with pytest.raises(EngineUnavailable, match="decoder = builtin, but"):
        HFBackend(str(cacheless_generate), HFOptions(block_size=4, decoder="builtin"))


def test_remask_below_on_the_checkpoints_entry_point_is_a_warning(shipped: Path) -> None:
    backend = HFBackend(str(shipped), HFOptions(block_size=4, max_tokens=8, remask_below=0.5))
    assert backend.decoder.kind == "checkpoint"
    off = [line for line in backend.notices if line.startswith("Re-denoising (remask_below)")]
    assert len(off) == 1 and EngineWarning.level_of(off[0]) == "warning"
    assert EngineWarning.level_of(backend.notices[0]) == "info"  # the decoder's choice
    builtin = HFBackend(
        str(shipped), HFOptions(block_size=4, max_tokens=8, remask_below=0.5, decoder="builtin")
    )
    assert not [line for line in builtin.notices if "remask_below" in line]
