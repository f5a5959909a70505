"""The SGLang backend against a stand-in ``sglang`` module that records calls."""

from __future__ import annotations

import sys
import types
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest
import yaml

from clover_code.engine.base import ChatRequest, ToolSpec
from clover_code.engine.events import (
    BlockCommitted,
    ContentDelta,
    Failed,
    Finished,
    ToolCallEnd,
    Usage,
)
from clover_code.engine.local.sglang import (
    OutputDiff,
    SGLangBackend,
    SGLangOptions,
    algorithm_yaml,
)
from clover_code.errors import EngineUnavailable, MissingExtra
from tests.tiny_model import build_tiny_checkpoint


class FakeEngine:
    """Records its arguments; streams scripted cumulative ``output_ids``."""

    instances: ClassVar[list[FakeEngine]] = []
    script: ClassVar[list[list[int]]] = []

    def __init__(self, **kwargs: Any) -> None:
        self.kwargs = kwargs
        self.config_text = Path(kwargs["dllm_algorithm_config"]).read_text()
        self.calls: list[dict[str, Any]] = []
        self.shut = False
        self.sent = 0
        self.closed = False
        FakeEngine.instances.append(self)

    async def async_generate(self, **kwargs: Any) -> AsyncIterator[dict[str, Any]]:
        self.calls.append(kwargs)

        async def chunks() -> AsyncIterator[dict[str, Any]]:
            try:
                for i, ids in enumerate(self.script):
                    last = i == len(self.script) - 1
                    finish = {"type": "stop"} if last else None
                    self.sent += 1
                    yield {"output_ids": ids, "meta_info": {"finish_reason": finish}}
            finally:
                self.closed = True

        return chunks()

    def shutdown(self) -> None:
        self.shut = True


@pytest.fixture
def fake_sglang(monkeypatch: pytest.MonkeyPatch) -> Iterator[type[FakeEngine]]:
    module = types.ModuleType("sglang")
    module.Engine = FakeEngine  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "sglang", module)
    FakeEngine.instances = []
    yield FakeEngine


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_checkpoint(tmp_path_factory.mktemp("tiny") / "ckpt")


def test_yaml_carries_threshold_and_block_size() -> None:
    text = algorithm_yaml(SGLangOptions(threshold=0.9, block_size=16))
    assert yaml.safe_load(text) == {"threshold": 0.9, "block_size": 16}


def test_engine_arguments(fake_sglang: type[FakeEngine], checkpoint: Path) -> None:
    options = SGLangOptions(tp_size=2, mem_fraction_static=0.8, quantization="fp8")
    SGLangBackend(str(checkpoint), options, cuda_available=lambda: True)
    engine = fake_sglang.instances[0]
    assert engine.kwargs["model_path"] == str(checkpoint)
    assert engine.kwargs["dllm_algorithm"] == "LowConfidence"
    assert engine.kwargs["trust_remote_code"] is True
    assert engine.kwargs["tp_size"] == 2
    assert engine.kwargs["mem_fraction_static"] == 0.8
    assert engine.kwargs["quantization"] == "fp8"
    assert engine.kwargs["incremental_streaming_output"] is False
    assert yaml.safe_load(engine.config_text) == {"threshold": 0.95, "block_size": 32}


def test_cumulative_ids_are_diffed_and_empty_chunks_dropped() -> None:
    diff = OutputDiff()
    assert diff.new_ids({"output_ids": [1, 2, 3]}) == [1, 2, 3]
    assert diff.new_ids({"output_ids": [1, 2, 3]}) == []
    assert diff.new_ids({"output_ids": [1, 2, 3, 4, 5]}) == [4, 5]
    assert diff.new_ids({}) == []


async def test_stream_blocks_parse_and_shutdown(
    fake_sglang: type[FakeEngine], checkpoint: Path
) -> None:
    backend = SGLangBackend(str(checkpoint), cuda_available=lambda: True)
    tok = backend.tokenizer
    text = (
        "hmm</think>\n\n<tool_call>\n<function=ls>\n<parameter=path>\nsrc\n"
        "</parameter>\n</function>\n</tool_call>"
    )
    ids = tok(text, add_special_tokens=False)["input_ids"] + [
        tok.convert_tokens_to_ids("<|im_end|>")
    ]
    cut = len(ids) // 2
    fake_sglang.script = [ids[:cut], ids[:cut], ids]
    tool = ToolSpec("ls", "list", {"type": "object", "properties": {"path": {"type": "string"}}})
    events = [
        e async for e in backend.stream(ChatRequest([{"role": "user", "content": "x"}], [tool]))
    ]
    blocks = [e for e in events if isinstance(e, BlockCommitted)]
    assert len(blocks) == 2 and "".join(b.text for b in blocks) == text
    call = next(e for e in events if isinstance(e, ToolCallEnd))
    assert call.arguments == {"path": "src"}
    assert next(e for e in events if isinstance(e, Usage)).completion_tokens == len(ids) - 1
    assert events[-1] == Finished("tool_calls")
    engine = fake_sglang.instances[0]
    assert engine.calls[0]["stream"] is True and engine.calls[0]["input_ids"][
        0
    ] == tok.convert_tokens_to_ids("<|im_start|>")
    await backend.aclose()
    assert engine.shut


async def test_stop_strings_go_to_sglang_and_end_the_stream_here_too(
    fake_sglang: type[FakeEngine], checkpoint: Path
) -> None:
    backend = SGLangBackend(str(checkpoint), cuda_available=lambda: True)
    tok = backend.tokenizer
    ids = tok("hmm</think>\n\nhello STOP and more", add_special_tokens=False)["input_ids"]
    cut = ids.index(tok("hello", add_special_tokens=False)["input_ids"][-1]) + 2
    fake_sglang.script = [ids[:cut], ids, ids + ids]
    request = ChatRequest([{"role": "user", "content": "x"}], stop=("STOP",))
    events = [e async for e in backend.stream(request)]
    content = "".join(e.text for e in events if isinstance(e, ContentDelta))
    assert content == "hello" and events[-1] == Finished("stop")
    engine = fake_sglang.instances[0]
    assert engine.calls[0]["sampling_params"]["stop"] == ["STOP"]
    assert engine.sent == 2 and engine.closed  # the request was given up at once
    await backend.aclose()


def test_without_sglang_one_clear_sentence(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "sglang", None)
    with pytest.raises(MissingExtra, match=r"not installed.*clover-code\[sglang\]") as info:
        SGLangBackend("/nowhere")
    assert info.value.exit_code == 2


def test_without_cuda_one_clear_sentence(fake_sglang: type[FakeEngine]) -> None:
    with pytest.raises(EngineUnavailable, match="CUDA GPU"):
        SGLangBackend("/nowhere", cuda_available=lambda: False)


async def test_engine_failure_mid_stream_is_failed(
    fake_sglang: type[FakeEngine], checkpoint: Path
) -> None:
    backend = SGLangBackend(str(checkpoint), cuda_available=lambda: True)

    async def broken(**kwargs: Any) -> Any:
        raise RuntimeError("CUDA error: out of memory")

    backend.engine.async_generate = broken
    events = [e async for e in backend.stream(ChatRequest([{"role": "user", "content": "x"}]))]
    assert isinstance(events[0], Failed) and "out of memory" in str(events[0].error)
    assert events[-1] == Finished("error")
