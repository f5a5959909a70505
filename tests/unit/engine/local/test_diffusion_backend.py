"""The hf backend on the tiny checkpoint, loaded through from_pretrained; bad inputs."""

from __future__ import annotations

import functools
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from clover_code.config.settings import Settings
from clover_code.engine.base import ChatRequest, ToolSpec
from clover_code.engine.events import (
    BlockCommitted,
    BlockDraft,
    ContentDelta,
    Failed,
    Finished,
    ToolCallEnd,
    Usage,
)
from clover_code.engine.local.hf import HFBackend, HFOptions
from clover_code.engine.select import build_backend
from clover_code.errors import ContextOverflow, EngineUnavailable
from tests.tiny_model import build_tiny_checkpoint, script_text
from tests.waiting import async_wait_until


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_checkpoint(tmp_path_factory.mktemp("tiny") / "ckpt")


async def _collect(backend: HFBackend, request: ChatRequest) -> list[Any]:
    return [event async for event in backend.stream(request)]


async def test_streams_drafts_blocks_and_parsed_tool_call(checkpoint: Path) -> None:
    backend = HFBackend(str(checkpoint), HFOptions(block_size=8, max_tokens=200))
    text = (
        "ok</think>\n\n<tool_call>\n<function=ls>\n<parameter=path>\n.\n"
        "</parameter>\n</function>\n</tool_call>"
    )
    script_text(backend, text)
    tool = ToolSpec("ls", "list", {"type": "object", "properties": {"path": {"type": "string"}}})
    events = await _collect(backend, ChatRequest([{"role": "user", "content": "hi"}], [tool]))
    assert not [e for e in events if isinstance(e, Failed)], events
    drafts = [e for e in events if isinstance(e, BlockDraft)]
    blocks = [e for e in events if isinstance(e, BlockCommitted)]
    assert drafts and all(len(d.tokens) == len(d.masked) for d in drafts)
    assert "".join(b.text for b in blocks) == text
    assert all(b.steps == 1 for b in blocks)
    calls = [e for e in events if isinstance(e, ToolCallEnd)]
    assert calls[0].name == "ls" and calls[0].arguments == {"path": "."}
    usage = next(e for e in events if isinstance(e, Usage))
    assert usage.completion_tokens == len(backend.tokenizer(text)["input_ids"])
    assert events[-1] == Finished("tool_calls")
    assert backend.last_stats.tokens_per_forward > 1


async def test_prompt_over_the_context_limit_fails_cleanly(checkpoint: Path) -> None:
    backend = HFBackend(str(checkpoint), HFOptions(block_size=8, context_window=64))
    events = await _collect(backend, ChatRequest([{"role": "user", "content": "x" * 200}]))
    assert isinstance(events[0], Failed) and isinstance(events[0].error, ContextOverflow)
    assert events[-1] == Finished("error")
    # The backend stays usable after a failure.
    events = await _collect(backend, ChatRequest([]))
    assert isinstance(events[0], Failed) and "empty" in str(events[0].error)


def test_path_that_is_not_a_checkpoint(tmp_path: Path) -> None:
    with pytest.raises(EngineUnavailable, match="not a Hugging Face checkpoint"):
        HFBackend(str(tmp_path))


def test_checkpoint_without_mask_token(tmp_path: Path) -> None:
    path = build_tiny_checkpoint(tmp_path / "nomask", mask_token=False)
    with pytest.raises(EngineUnavailable, match="no mask token"):
        HFBackend(str(path))


def test_remote_code_that_raises(checkpoint: Path, tmp_path: Path) -> None:
    broken = tmp_path / "broken"
    shutil.copytree(checkpoint, broken)
    (broken / "modeling_broken.py").write_text("raise RuntimeError('remote code exploded')\n")
    config = json.loads((broken / "config.json").read_text())
    config["auto_map"] = {"AutoModelForCausalLM": "modeling_broken.Broken"}
    (broken / "config.json").write_text(json.dumps(config))
    with pytest.raises(EngineUnavailable, match="remote code exploded"):
        HFBackend(str(broken))


def test_select_builds_the_hf_engine(checkpoint: Path) -> None:
    backend = build_backend(Settings(engine="hf", model_path=str(checkpoint), block_size=8))
    assert isinstance(backend, HFBackend) and backend.block_size == 8


def test_select_needs_a_model_path() -> None:
    with pytest.raises(EngineUnavailable, match="--model-path"):
        build_backend(Settings(engine="hf"))


async def test_out_of_memory_is_one_sentence_and_the_backend_stays_usable(
    checkpoint: Path,
) -> None:
    import torch

    backend = HFBackend(str(checkpoint), HFOptions(block_size=8, max_tokens=16))
    model = backend._model
    real = model.forward
    calls = {"n": 0}

    @functools.wraps(real)
    def failing(*args: Any, **kwargs: Any) -> Any:
        calls["n"] += 1
        if calls["n"] == 2:
            raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")
        return real(*args, **kwargs)

    model.forward = failing
    events = await _collect(backend, ChatRequest([{"role": "user", "content": "hi"}]))
    failed = next(e for e in events if isinstance(e, Failed))
    assert str(failed.error).startswith("the GPU ran out of memory")
    assert events[-1].reason in ("error", "interrupted")
    events = await _collect(backend, ChatRequest([{"role": "user", "content": "hi"}]))
    assert not [e for e in events if isinstance(e, Failed)]
    assert events[-1] == Finished("length")


async def test_closing_the_stream_stops_decoding(checkpoint: Path) -> None:
    backend = HFBackend(str(checkpoint), HFOptions(block_size=8, max_tokens=4000))
    stream = backend.stream(ChatRequest([{"role": "user", "content": "hi"}]))
    first = await anext(stream)
    assert isinstance(first, BlockDraft)
    await stream.aclose()
    await async_wait_until(lambda: not backend.busy, message="the abandoned response to leave")
    assert backend.last_stats is not None and backend.last_stats.tokens < 4000


async def test_closing_the_backend_waits_for_its_decoding_thread(checkpoint: Path) -> None:
    """The model is dropped only once no forward can still be running on it."""
    import threading

    before = set(threading.enumerate())
    backend = HFBackend(str(checkpoint), HFOptions(block_size=8, max_tokens=4000))
    stream = backend.stream(ChatRequest([{"role": "user", "content": "hi"}]))
    assert isinstance(await anext(stream), BlockDraft)
    decoding = [t for t in set(threading.enumerate()) - before if t.name == "clover-batch"]
    assert len(decoding) == 1
    await stream.aclose()
    await backend.aclose()
    assert not decoding[0].is_alive()


def test_thinking_off_renders_an_empty_think_block(checkpoint: Path) -> None:
    from clover_code.engine.local.diffusion.chat import render_prompt

    backend = HFBackend(str(checkpoint), HFOptions(block_size=8))
    messages = [{"role": "user", "content": "hi"}]
    on = backend.tokenizer.decode(render_prompt(backend.tokenizer, ChatRequest(messages)))
    off = backend.tokenizer.decode(
        render_prompt(backend.tokenizer, ChatRequest(messages, enable_thinking=False))
    )
    assert on.endswith("<|im_start|>assistant\n<think>\n")
    assert off.endswith("<think>\n\n</think>\n\n")


async def test_stop_string_ends_the_response_inside_a_block(checkpoint: Path) -> None:
    options = HFOptions(block_size=8, max_tokens=200, stop_strings=("STOP",))
    backend = HFBackend(str(checkpoint), options)
    script_text(backend, "abc</think>\n\nhello STOP and more text that never shows")
    events = await _collect(backend, ChatRequest([{"role": "user", "content": "hi"}]))
    text = "".join(e.text for e in events if isinstance(e, BlockCommitted))
    assert text == "abc</think>\n\nhello "
    assert events[-1] == Finished("stop")


def _assembled(checkpoint: Path, pieces: list[str], stops: tuple[str, ...]) -> tuple[str, bool]:
    """Feed ``pieces`` as committed blocks; return the text let out and whether it stopped."""
    from clover_code.engine.local.diffusion.chat import OutputAssembler

    tok = HFBackend(str(checkpoint), HFOptions(block_size=8)).tokenizer
    request = ChatRequest([{"role": "user", "content": "hi"}], enable_thinking=False)
    assembler = OutputAssembler(tok, request, 0, stops)
    events: list[Any] = []
    for piece in pieces:
        events += assembler.block(tok(piece, add_special_tokens=False)["input_ids"], 1)
        if assembler.stopped:
            break
    events += assembler.finish("stop")
    return "".join(e.text for e in events if isinstance(e, ContentDelta)), assembler.stopped


def test_a_stop_string_split_across_blocks_never_leaks_its_start(checkpoint: Path) -> None:
    assert _assembled(checkpoint, ["hello ST", "OP and more"], ("STOP",)) == ("hello", True)
    assert _assembled(checkpoint, ["a S", "T", "OP"], ("STOP",)) == ("a", True)


def test_text_held_back_for_a_stop_string_comes_out_when_it_is_not_one(
    checkpoint: Path,
) -> None:
    assert _assembled(checkpoint, ["the ST", "ARS shine"], ("STOP",)) == (
        "the STARS shine",
        False,
    )
    # Held back at the very end of the response: released by finish.
    assert _assembled(checkpoint, ["ends with ST"], ("STOP",)) == ("ends with ST", False)


def test_decoding_controls_from_checkpoint_settings_and_request(
    checkpoint: Path, tmp_path: Path
) -> None:
    import shutil

    from clover_code.config.settings import Settings
    from clover_code.engine.select import hf_options

    local = tmp_path / "ckpt"
    shutil.copytree(checkpoint, local)
    card = json.loads((local / "generation_config.json").read_text())
    card["repetition_penalty"] = 1.3
    (local / "generation_config.json").write_text(json.dumps(card))
    plain = HFBackend(str(local), hf_options(Settings(block_size=8)))
    assert plain.controls.repetition_penalty == 1.3  # the checkpoint's own default
    assert plain.options.confidences  # drafts carry confidences unless turned off
    assert not hf_options(Settings(draft_confidences=False)).confidences
    settings = Settings(block_size=8, repetition_penalty=1.1, frequency_penalty=0.2)
    backend = HFBackend(str(local), hf_options(settings))
    assert (backend.controls.repetition_penalty, backend.controls.frequency_penalty) == (1.1, 0.2)
    request = ChatRequest([{"role": "user", "content": "x"}], controls={"presence_penalty": 0.7})
    decode = backend.decode_options(request)
    assert decode.prefill == "block"  # the default: SGLang's dLLM extend mode
    loop_settings = Settings(prefill="causal", max_batch=3, expert_select="half", expert_mass=0.9)
    options = hf_options(loop_settings)
    assert (options.prefill, options.max_batch, options.expert_select) == ("causal", 3, "half")
    assert decode.controls.presence_penalty == 0.7
    assert decode.controls.repetition_penalty == 1.1  # the rest stays


def test_a_character_split_across_byte_tokens_shows_whole_in_drafts(checkpoint: Path) -> None:
    from clover_code.engine.local.diffusion.chat import draft_texts

    tok = HFBackend(str(checkpoint), HFOptions(block_size=8)).tokenizer
    ids = tok("中文 ok", add_special_tokens=False)["input_ids"]  # 3 byte tokens per character
    assert [tok.decode([i]) for i in ids[:3]] == ["\ufffd"] * 3

    def piece(i: int) -> str:
        return str(tok.decode([i]))

    filled = [False] * len(ids)
    texts = draft_texts(ids, filled, piece, tok.decode)
    assert texts[:7] == ["中", "", "", "文", "", "", " "] and "".join(texts) == "中文 ok"
    # Half of 文 still masked: its filled bytes show nothing yet, never a replacement mark.
    partly = [False, False, False, False, True, False, False, False, False]
    texts = draft_texts(ids, partly, piece, tok.decode)
    assert texts[:4] == ["中", "", "", ""] and "\ufffd" not in "".join(texts)


async def test_concurrent_requests_are_decoded_together_each_as_alone(checkpoint: Path) -> None:
    import asyncio

    from tests.tiny_model import script_by_position

    backend = HFBackend(str(checkpoint), HFOptions(block_size=8, max_tokens=20, max_batch=4))
    widths = script_by_position(backend)
    requests = [ChatRequest([{"role": "user", "content": "hi " * k}]) for k in (1, 4, 9)]

    def text(events: list[Any]) -> str:
        assert isinstance(events[-1], Finished) and events[-1].reason == "length", events
        return "".join(e.text for e in events if isinstance(e, BlockCommitted))

    alone = [text(await _collect(backend, r)) for r in requests]
    assert len(set(alone)) == 3  # the prompts' lengths put each answer elsewhere
    assert max(widths) == 1
    widths.clear()
    together = await asyncio.gather(*(_collect(backend, r) for r in requests))
    assert [text(events) for events in together] == alone
    assert max(widths) == 3  # one forward carried all three
    await backend.aclose()
