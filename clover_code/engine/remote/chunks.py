"""Turning OpenAI chat-completion stream chunks into engine events.

``ChunkDecoder`` knows nothing about HTTP: it takes decoded chunk objects one
at a time and returns the events they mean. It understands

* native ``tool_calls`` deltas in both common styles: llama.cpp / OpenAI
  (id and name first, then partial-JSON ``arguments`` fragments) and SGLang
  (whole parameters, or the whole JSON, per delta), through ``NativeCalls``
  (``native_calls.py``);
* ``reasoning_content`` / ``reasoning`` deltas (a server-side reasoning parser);
* raw Qwen3 text in ``content`` (``<think>`` and ``<tool_call>`` XML) through
  ``Qwen3StreamParser`` when the server did not parse it;
* the ``clover_draft`` extension of ``clover-code serve`` (a denoising step
  in a chunk with empty ``choices``), as ``BlockDraft``;
* cumulative ``usage`` (per chunk when the server streams it continuously),
  used both for the ``Usage`` event and for exact block token counts.

It is the hot loop of stream ingest, so the common path (one text delta) does
a handful of dict lookups and nothing else.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, Literal

from clover_code.engine.base import ToolSpec
from clover_code.engine.events import (
    BlockCommitted,
    BlockDraft,
    ContentDelta,
    EngineEvent,
    FinishReason,
    ReasoningDelta,
    ToolCallArgs,
    ToolCallEnd,
    ToolCallStart,
    Usage,
)
from clover_code.engine.qwen3.parser import Qwen3StreamParser
from clover_code.engine.remote.blocks import BlockGrouper, estimate_tokens
from clover_code.engine.remote.native_calls import NativeCalls
from clover_code.protocol.confidence import TokenPiece, decode_pieces
from clover_code.protocol.json_text import printable

__all__ = ["ChunkDecoder", "RawParsing", "ServerStreamError"]

RawParsing = Literal["auto", "always", "never"]

_FINISH_REASONS: dict[str, FinishReason] = {
    "stop": "stop",
    "eos": "stop",
    "end_turn": "stop",
    "length": "length",
    "max_tokens": "length",
    "tool_calls": "tool_calls",
    "function_call": "tool_calls",
}


class ServerStreamError(Exception):
    """The server put an error object into the stream instead of a chunk."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class ChunkDecoder:
    """Decodes the chunks of one streamed response into engine events."""

    def __init__(
        self,
        *,
        block_size: int,
        raw_parsing: RawParsing = "auto",
        enable_thinking: bool = True,
        tools: Sequence[ToolSpec] = (),
    ) -> None:
        self.grouper = BlockGrouper(block_size)
        self._parser: Qwen3StreamParser | None = None
        if raw_parsing != "never":
            # "always": the server streams the model's raw text, which starts
            # inside reasoning when thinking is on. "auto": the server may have
            # parsed nothing, so explicit tags in content are still honoured.
            starts_in_reasoning = enable_thinking if raw_parsing == "always" else False
            self._parser = Qwen3StreamParser(tools, starts_in_reasoning=starts_in_reasoning)
        self._native = NativeCalls()
        self._parser_index: dict[int, int] = {}
        self._usage: dict[str, Any] | None = None
        self._last_completion = 0
        self._unassigned_tokens = 0
        self._parser_done = False
        self.server_finish: str | None = None
        """The ``finish_reason`` the server sent, once it has."""
        self._draft_steps = 0  # drafts seen since the last committed block
        self._raw_text = ""  # clover_block text not yet given to a committed block
        self._raw_pieces: list[TokenPiece] = []
        self._parsed_call = False

    @property
    def saw_tool_call(self) -> bool:
        """Whether the response has a tool call (native, or parsed from its text)."""
        return self._parsed_call or self._native.any_started

    # -- the hot path ---------------------------------------------------------

    def feed(self, chunk: dict[str, Any]) -> list[EngineEvent]:
        """Events for one decoded chunk. Raises ``ServerStreamError`` for an error object."""
        events: list[EngineEvent] = []
        usage = chunk.get("usage")
        if usage:
            self._note_usage(usage)
        choices = chunk.get("choices")
        if not choices:
            draft = chunk.get("clover_draft")
            if draft:
                events.append(_draft_event(draft))
                self._draft_steps += 1
            block = chunk.get("clover_block")
            if isinstance(block, dict):
                self._note_block(block)
            if "error" in chunk:
                raise ServerStreamError(_stream_error_message(chunk["error"]))
            return events
        choice = choices[0]
        delta = choice.get("delta")
        if delta:
            raw = ""
            # A JSON escape can carry a lone surrogate, which no front end can write.
            reasoning = _text(delta.get("reasoning_content") or delta.get("reasoning"))
            if reasoning:
                events.append(ReasoningDelta(reasoning))
                raw = reasoning
            content = _text(delta.get("content"))
            if content:
                if self._parser is None:
                    events.append(ContentDelta(content))
                else:
                    self._add_parsed(self._parser.feed(content), events)
                raw = raw + content if raw else content
            tool_calls = delta.get("tool_calls")
            if tool_calls:
                raw += self._native.feed(tool_calls, events)
            if raw:
                if self._unassigned_tokens > 0:
                    tokens, exact = self._unassigned_tokens, True
                    self._unassigned_tokens = 0
                else:
                    tokens, exact = estimate_tokens(raw), False
                whole = self._draft_steps > 0
                committed = self.grouper.add(raw, tokens, exact=exact, whole=whole)
                if committed:
                    self._commit(committed, events)
        finish = choice.get("finish_reason")
        if finish:
            self.server_finish = finish
            self._end_output(events, interrupted=False)
        return events

    def feed_completion(self, completion: dict[str, Any]) -> list[EngineEvent]:
        """Events for a whole (non-streamed) ``chat.completion``: one big chunk."""
        choice = completion["choices"][0]
        message = dict(choice.get("message") or {})
        calls = message.get("tool_calls") or []
        message["tool_calls"] = [{"index": i, **call} for i, call in enumerate(calls)]
        finish = choice.get("finish_reason") or "stop"
        chunk: dict[str, Any] = {
            "choices": [{"delta": message, "finish_reason": finish}],
            "usage": completion.get("usage"),
        }
        return self.feed(chunk)

    def _note_block(self, block: dict[str, Any]) -> None:
        """A ``clover_block``: a committed block's raw text and its tokens' confidences,
        sent before the chunk with its parsed text (ignored when malformed, or when the
        pieces do not cover the text: that block's confidences are then unknown)."""
        text, encoded = block.get("text"), block.get("confidence")
        if not isinstance(text, str) or not isinstance(encoded, str):
            return
        try:
            pieces = decode_pieces(encoded)
        except ValueError:
            return
        if sum(piece.chars for piece in pieces) != len(text):
            return
        self._raw_text += text
        self._raw_pieces += pieces

    def _commit(self, committed: list[BlockCommitted], events: list[EngineEvent]) -> None:
        """Add ``committed`` blocks; the drafts seen since the last one are its steps."""
        if committed and self._draft_steps:
            # A server that sends drafts sends every denoising step of a block
            # before the chunk that commits it (steps of a block that carried
            # no text fall to the next one, as its tokens do).
            committed[-1].steps = self._draft_steps
            self._draft_steps = 0
        if committed and self._raw_pieces:
            # The server's raw text and confidences replace the parsed text the block was
            # grouped from, so offsets into it are the model's own (as with a local engine).
            committed[-1].text, committed[-1].pieces = self._raw_text, self._raw_pieces
            self._raw_text, self._raw_pieces = "", []
        events.extend(committed)

    def _note_usage(self, usage: dict[str, Any]) -> None:
        self._usage = usage
        completion = usage.get("completion_tokens")
        if isinstance(completion, int) and completion > self._last_completion:
            # Cumulative counts: the growth since the last report belongs to
            # the next chunk that carries text (often this one).
            self._unassigned_tokens += completion - self._last_completion
            self._last_completion = completion

    def _add_parsed(self, parsed: list[EngineEvent], events: list[EngineEvent]) -> None:
        for event in parsed:
            if isinstance(event, ToolCallStart | ToolCallArgs | ToolCallEnd):
                # Give parser calls indexes that cannot clash with native ones.
                index = self._parser_index.get(event.index)
                if index is None:
                    index = self._parser_index[event.index] = self._native.new_index()
                event.index = index
                self._parsed_call = True
            events.append(event)

    # -- the end of a response ------------------------------------------------

    def _end_output(self, events: list[EngineEvent], *, interrupted: bool) -> None:
        if self._parser is not None and not self._parser_done:
            self._parser_done = True
            tail = self._parser.finish()
            if interrupted:
                for event in tail:
                    if isinstance(event, ToolCallEnd) and event.error is None:
                        # Never hand a truncated call to the agent as if whole.
                        event.arguments = {}
                        event.error = (
                            f"the stream broke before the call to tool {event.name} was complete"
                        )
            self._add_parsed(tail, events)
        self._native.end_all(events, interrupted=interrupted)

    def finish(self) -> list[EngineEvent]:
        """Events that close a response that ended normally (no ``Finished``)."""
        events: list[EngineEvent] = []
        self._end_output(events, interrupted=False)
        self._commit(self.grouper.flush(), events)
        if self._draft_steps and self._unassigned_tokens > 0:
            # The last block's text was all markup the server parsed away (a
            # tool call's closing tags): it still counts, with its steps.
            tokens, self._unassigned_tokens = self._unassigned_tokens, 0
            self._commit(self.grouper.add("", tokens, exact=True, whole=True), events)
        usage = self._usage
        if usage is not None:
            prompt = usage.get("prompt_tokens")
            completion = usage.get("completion_tokens")
            if isinstance(prompt, int) and isinstance(completion, int):
                details = usage.get("prompt_tokens_details")
                cached = details.get("cached_tokens") if isinstance(details, dict) else None
                cached = cached if isinstance(cached, int) and 0 < cached <= prompt else 0
                # An extension clover-code serve sends: distinct experts per MoE layer per block.
                experts = usage.get("experts_per_layer")
                if isinstance(experts, bool) or not isinstance(experts, int | float):
                    experts = None
                events.append(Usage(prompt, completion, experts, cached_tokens=cached))
        return events

    def interrupt(self) -> list[EngineEvent]:
        """Events that close a response whose stream broke: keep what arrived."""
        events: list[EngineEvent] = []
        self._end_output(events, interrupted=True)
        self._commit(self.grouper.flush(), events)
        return events

    def finish_reason(self) -> FinishReason:
        """The reason to report in ``Finished`` for a response that ended normally."""
        if self.saw_tool_call:
            return "tool_calls"
        return _FINISH_REASONS.get(self.server_finish or "stop", "stop")


def _text(value: Any) -> str:
    """A delta's text, with lone surrogates escaped (``printable``); "" when absent."""
    return printable(value) if isinstance(value, str) else ""


def _stream_error_message(error: Any) -> str:
    if isinstance(error, dict):
        message = error.get("message") or error.get("detail") or json.dumps(error)
    else:
        message = str(error)
    return " ".join(str(message).split())[:300]


def _draft_event(draft: dict[str, Any]) -> BlockDraft:
    """A ``clover_draft`` object (see ``clover_code.serve.app``) as a ``BlockDraft``."""
    confidences = draft.get("confidences")
    return BlockDraft(
        int(draft["block"]),
        int(draft["step"]),
        [str(t) for t in draft["tokens"]],
        [bool(m) for m in draft["masked"]],
        [float(c) for c in confidences] if confidences else None,
    )
