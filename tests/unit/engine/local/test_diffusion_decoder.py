"""decoder = auto | checkpoint | builtin: the checkpoint's own entry point first, explicitly."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

from clover_code.engine.base import ChatRequest
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
