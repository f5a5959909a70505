"""Builders for chat-completion chunk streams shaped like real servers.

* ``SGLangStream``: SGLang serving a block-diffusion model: one chunk per
  committed 32-token block, cumulative ``usage`` on every chunk (continuous
  usage stats), tool arguments one whole parameter per delta (or the whole
  JSON at once), ``finish_reason`` ``tool_calls`` after a call.
* ``LlamaCppStream``: llama.cpp's ``llama-server``: one token per chunk, usage
  only in a final chunk, tool arguments as partial-JSON fragments.

Both return plain chunk dicts for ``sse_response``; deterministic, so tests
and the benchmark can assert on exact text.
"""

from __future__ import annotations

import json
import re
from typing import Any

__all__ = ["LlamaCppStream", "SGLangStream", "chunk", "split_tokens"]

_TOKEN = re.compile(r"\s*[^\s]{1,6}|\s+")


def split_tokens(text: str) -> list[str]:
    """Cut text into token-like pieces (a word part with its leading space)."""
    return _TOKEN.findall(text)


def chunk(
    delta: dict[str, Any] | None = None,
    *,
    finish_reason: str | None = None,
    usage: dict[str, int] | None = None,
    model: str = "test-model",
    no_choices: bool = False,
) -> dict[str, Any]:
    """One ``chat.completion.chunk`` object."""
    body: dict[str, Any] = {
        "id": "chatcmpl-scripted",
        "object": "chat.completion.chunk",
        "created": 1_700_000_000,
        "model": model,
        "choices": []
        if no_choices
        else [{"index": 0, "delta": delta or {}, "finish_reason": finish_reason}],
    }
    if usage is not None:
        body["usage"] = usage
    return body


class SGLangStream:
    """Chunks as SGLang streams a dLLM: one per committed block, usage on each."""

    def __init__(
        self, *, model: str = "test-model", block_tokens: int = 32, prompt_tokens: int = 57
    ) -> None:
        self.model = model
        self.block_tokens = block_tokens
        self.prompt_tokens = prompt_tokens
        self.completion_tokens = 0
        self.text = ""
        """Everything the chunks carry as text (reasoning, content, arguments)."""
        self._calls = 0
        self._chunks = [self._chunk({"role": "assistant", "content": ""}, tokens=0)]

    def _chunk(self, delta: dict[str, Any], *, tokens: int, finish: str | None = None) -> Any:
        self.completion_tokens += tokens
        usage = {
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "total_tokens": self.prompt_tokens + self.completion_tokens,
        }
        return chunk(delta, finish_reason=finish, usage=usage, model=self.model)

    def reasoning(self, *blocks: str) -> SGLangStream:
        """One chunk of ``reasoning_content`` per block."""
        for block in blocks:
            self._chunks.append(self._chunk({"reasoning_content": block}, tokens=self.block_tokens))
            self.text += block
        return self

    def content(self, *blocks: str, tokens: int | None = None) -> SGLangStream:
        """One chunk of ``content`` per block (raw Qwen3 text for a parser-less server)."""
        for block in blocks:
            count = self.block_tokens if tokens is None else tokens
            self._chunks.append(self._chunk({"content": block}, tokens=count))
            self.text += block
        return self

    def tool_call(self, name: str, arguments: dict[str, Any], *, whole: bool = False) -> str:
        """A tool call: name first, then one delta per parameter (or all at once).

        Returns the call id.
        """
        index = self._calls
        self._calls += 1
        call_id = f"call_sglang_{index}"
        head = {"index": index, "id": call_id, "type": "function"}
        if whole:
            text = json.dumps(arguments)
            function = {"name": name, "arguments": text}
            self._chunks.append(
                self._chunk(
                    {"tool_calls": [{**head, "function": function}]}, tokens=self.block_tokens
                )
            )
            self.text += text
            return call_id
        function = {"name": name, "arguments": ""}
        self._chunks.append(self._chunk({"tool_calls": [{**head, "function": function}]}, tokens=0))
        items = list(arguments.items())
        pieces = [
            ("{" if i == 0 else ", ") + f"{json.dumps(key)}: {json.dumps(value)}"
            for i, (key, value) in enumerate(items)
        ]
        pieces.append("}" if items else "{}")
        for piece in pieces:
            delta = {"tool_calls": [{"index": index, "function": {"arguments": piece}}]}
            self._chunks.append(self._chunk(delta, tokens=self.block_tokens))
            self.text += piece
        return call_id

    def chunks(self, finish_reason: str | None = None) -> list[dict[str, Any]]:
        """All chunks, ending with the finish chunk and the final usage chunk."""
        reason = finish_reason or ("tool_calls" if self._calls else "stop")
        final = chunk(
            usage={
                "prompt_tokens": self.prompt_tokens,
                "completion_tokens": self.completion_tokens,
                "total_tokens": self.prompt_tokens + self.completion_tokens,
            },
            model=self.model,
            no_choices=True,
        )
        return [*self._chunks, self._chunk({}, tokens=0, finish=reason), final]


class LlamaCppStream:
    """Chunks as llama.cpp streams: one token each, usage only at the end."""

    def __init__(self, *, model: str = "test-model", prompt_tokens: int = 31) -> None:
        self.model = model
        self.prompt_tokens = prompt_tokens
        self.tokens = 0
        self.text = ""
        self._calls = 0
        self._chunks = [chunk({"role": "assistant", "content": None}, model=model)]

    def _tokens(self, field: str, text: str) -> None:
        for token in split_tokens(text):
            self._chunks.append(chunk({field: token}, model=self.model))
            self.tokens += 1
            self.text += token

    def reasoning(self, text: str) -> LlamaCppStream:
        """``reasoning_content`` one token per chunk."""
        self._tokens("reasoning_content", text)
        return self

    def content(self, text: str) -> LlamaCppStream:
        """``content`` one token per chunk."""
        self._tokens("content", text)
        return self

    def tool_call(self, name: str, arguments: dict[str, Any] | str, *, fragment: int = 5) -> str:
        """A tool call: id and name first, then ``fragment``-character JSON pieces.

        ``arguments`` given as a string is sent verbatim (to script broken JSON).
        """
        index = self._calls
        self._calls += 1
        call_id = f"call_llama_{index}"
        first = {"index": index, "id": call_id, "type": "function"}
        first["function"] = {"name": name, "arguments": ""}
        self._chunks.append(chunk({"tool_calls": [first]}, model=self.model))
        self.tokens += 1
        text = arguments if isinstance(arguments, str) else json.dumps(arguments)
        for start in range(0, len(text), fragment):
            piece = text[start : start + fragment]
            delta = {"tool_calls": [{"index": index, "function": {"arguments": piece}}]}
            self._chunks.append(chunk(delta, model=self.model))
            self.tokens += 1
            self.text += piece
        return call_id

    def chunks(self, finish_reason: str | None = None) -> list[dict[str, Any]]:
        """All chunks, ending with the finish chunk and the usage chunk."""
        reason = finish_reason or ("tool_calls" if self._calls else "stop")
        usage = {
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.tokens,
            "total_tokens": self.prompt_tokens + self.tokens,
        }
        return [
            *self._chunks,
            chunk({}, finish_reason=reason, model=self.model),
            chunk(usage=usage, model=self.model, no_choices=True),
        ]
