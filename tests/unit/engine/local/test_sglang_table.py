"""The sglang engine says what stock SGLang cannot run, before starting it.

A stand-in ``sglang`` package is written to disk (the dLLM table is read from
the installed source file, as it is from a real install): its config module
has a ``DLLM_PARAMS`` table shaped as SGLang 0.5.23's, and ``Engine`` records
what it is started with.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from clover_code.engine.base import EngineWarning
from clover_code.engine.local.sglang import SGLangBackend, SGLangOptions
from clover_code.engine.local.sglang_table import dllm_architectures
from clover_code.errors import EngineUnavailable
from tests.tiny_model import build_tiny_checkpoint

INIT = """
__version__ = "0.5.23"
STARTED = []


class Engine:
    def __init__(self, **kwargs):
        STARTED.append(kwargs)

    def shutdown(self):
        pass
"""

DLLM_CONFIG = """
class DllmConfig:
    @classmethod
    def from_server_args(cls, server_args, model_config):
        DLLM_PARAMS = {
            "LLaDA2MoeModelLM": {"block_size": 32, "mask_id": 1},
            "SDARForCausalLM": {"block_size": 4, "mask_id": 2},
            "SDARMoeForCausalLM": {"block_size": 4, "mask_id": 2},
            "DiffusionGemmaForCausalLM": {"block_size": 256, "mask_id": -1},
        }
        arch = model_config.hf_config.architectures[0]
        if arch not in DLLM_PARAMS:
            raise RuntimeError(f"Unknown diffusion LLM: {arch}")
        return DLLM_PARAMS[arch]
"""


@pytest.fixture
def stub(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    package = tmp_path / "site" / "sglang"
    (package / "srt" / "dllm").mkdir(parents=True)
    (package / "__init__.py").write_text(INIT)
    (package / "srt" / "__init__.py").write_text("")
    (package / "srt" / "dllm" / "__init__.py").write_text("")
    (package / "srt" / "dllm" / "config.py").write_text(DLLM_CONFIG)
    for name in [m for m in sys.modules if m == "sglang" or m.startswith("sglang.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    import sglang

    yield sglang
    for name in [m for m in sys.modules if m == "sglang" or m.startswith("sglang.")]:
        del sys.modules[name]


@pytest.fixture(scope="module")
def qwen(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_checkpoint(tmp_path_factory.mktemp("tiny") / "ckpt")


def _as(checkpoint: Path, tmp_path: Path, arch: str) -> Path:
    path = tmp_path / arch
    shutil.copytree(checkpoint, path)
    config = json.loads((path / "config.json").read_text())
    config["architectures"] = [arch]
    (path / "config.json").write_text(json.dumps(config))
    return path


def test_the_table_is_read_from_the_installed_source(stub: Any) -> None:
    assert dllm_architectures() == {
        "LLaDA2MoeModelLM",
        "SDARForCausalLM",
        "SDARMoeForCausalLM",
        "DiffusionGemmaForCausalLM",
    }


def test_an_architecture_stock_sglang_cannot_run_is_one_sentence_before_start(
    stub: Any, qwen: Path
) -> None:
    with pytest.raises(EngineUnavailable) as info:
        SGLangBackend(str(qwen), cuda_available=lambda: True)
    message = info.value.message
    assert "SGLang 0.5.23 cannot run Qwen3_5MoeForCausalLM" in message
    assert "SDARMoeForCausalLM" in message
    assert "own SGLang build" in message and "--base-url" in message
    assert "\n" not in message and message.count(". ") == 0
    assert stub.STARTED == []


def test_a_listed_architecture_starts_and_names_what_it_cannot_apply(
    stub: Any, qwen: Path, tmp_path: Path
) -> None:
    path = _as(qwen, tmp_path, "SDARMoeForCausalLM")
    backend = SGLangBackend(str(path), SGLangOptions(expert_mass=0.9), cuda_available=lambda: True)
    assert len(stub.STARTED) == 1
    (notice,) = backend.notices  # that it reports no confidences: the session says it
    assert "penalties" in notice and "biases" in notice
    assert "expert selection" in notice
    assert EngineWarning.level_of(notice) == "info"
    plain = SGLangBackend(str(path), cuda_available=lambda: True)
    assert "expert selection" not in plain.notices[0]
    remask = SGLangBackend(str(path), SGLangOptions(remask_below=0.5), cuda_available=lambda: True)
    assert remask.notices[0] == plain.notices[0]
    (off,) = remask.notices[1:]
    assert off.startswith("Re-denoising (remask_below) is off: SGLang exposes no fill confidences")
    assert EngineWarning.level_of(off) == "warning"  # a setting asked for is not applied


def test_a_build_that_takes_expert_selection_gets_it(
    stub: Any, qwen: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    @dataclasses.dataclass
    class ServerArgs:
        model_path: str = ""
        dllm_expert_mass: float | None = None

    monkeypatch.setattr(stub, "ServerArgs", ServerArgs, raising=False)
    path = _as(qwen, tmp_path, "SDARMoeForCausalLM")
    backend = SGLangBackend(str(path), SGLangOptions(expert_mass=0.9), cuda_available=lambda: True)
    assert stub.STARTED[-1]["dllm_expert_mass"] == 0.9
    assert "expert selection" not in backend.notices[0]


def test_unknown_diffusion_llm_at_start_becomes_the_same_sentence(
    stub: Any, qwen: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A build whose table cannot be read: SGLang's own start-up error is translated.
    (Path(stub.__file__).parent / "srt" / "dllm" / "config.py").write_text("")

    class Refusing:
        def __init__(self, **kwargs: Any) -> None:
            raise RuntimeError("Unknown diffusion LLM: Qwen3_5MoeForCausalLM")

    monkeypatch.setattr(stub, "Engine", Refusing)
    with pytest.raises(EngineUnavailable, match="cannot run Qwen3_5MoeForCausalLM") as info:
        SGLangBackend(str(qwen), cuda_available=lambda: True)
    assert "--base-url" in info.value.message
