"""What the local engines share: prompt rendering, stop tokens, text and events.

``render_prompt`` renders a ``ChatRequest`` with the checkpoint's own chat
template (tools rendered by the template, ``enable_thinking`` passed to it).
``OutputAssembler`` turns committed token ids into engine events: it decodes
incrementally (a multi-byte character split across blocks is held back until
whole), cuts at stop strings (text that may begin one is held back until the
next block tells), parses reasoning and tool calls with
``Qwen3StreamParser`` and reports ``BlockCommitted`` after each block's
parsed deltas, as the remote backend does.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from clover_code.engine.base import ChatRequest
from clover_code.engine.events import (
    BlockCommitted,
    EngineEvent,
    Finished,
    FinishReason,
    Usage,
)
from clover_code.engine.qwen3.parser import Qwen3StreamParser
from clover_code.errors import EngineError
from clover_code.protocol.confidence import TokenPiece

__all__ = ["OutputAssembler", "draft_texts", "render_prompt", "stop_token_ids", "token_id"]

_STOP_TOKENS = ("<|im_end|>", "<|endoftext|>")
# Tokens re-decoded with each new piece so that merges across a block boundary
# (byte-level BPE, SentencePiece spaces) come out right.
_CONTEXT_TOKENS = 6
# The most tokens one character can be split into (UTF-8: four bytes).
_MAX_CHAR_TOKENS = 4


def render_prompt(tokenizer: Any, request: ChatRequest) -> list[int]:
    """Token ids of the request rendered by the checkpoint's chat template."""
    if not request.messages:
        raise EngineError("the prompt is empty; send at least one message")
    if not getattr(tokenizer, "chat_template", None):
        raise EngineError(
            "the checkpoint's tokenizer has no chat template; use a checkpoint that ships "
            "one (tokenizer_config.json or chat_template.jinja)"
        )
    text = tokenizer.apply_chat_template(
        request.messages,
        tools=[tool.openai() for tool in request.tools] or None,
        add_generation_prompt=True,
        enable_thinking=request.enable_thinking,
        tokenize=False,
    )
    ids: list[int] = tokenizer(text, add_special_tokens=False)["input_ids"]
    return ids


def token_id(tokenizer: Any, token: str) -> int | None:
    """The id of a single token, or None when the vocabulary lacks it."""
    value = tokenizer.convert_tokens_to_ids(token)
    if isinstance(value, int) and value != getattr(tokenizer, "unk_token_id", None):
        return value
    return None


def stop_token_ids(tokenizer: Any, config: Any) -> frozenset[int]:
    """The end-of-turn tokens: ``<|im_end|>``, ``<|endoftext|>`` and the config's eos."""
    ids = {i for i in (token_id(tokenizer, t) for t in _STOP_TOKENS) if i is not None}
    eos = getattr(config, "eos_token_id", None)
    if isinstance(eos, int):
        ids.add(eos)
    elif isinstance(eos, list):
        ids.update(i for i in eos if isinstance(i, int))
    if tokenizer.eos_token_id is not None:
        ids.add(int(tokenizer.eos_token_id))
    return frozenset(ids)


def draft_texts(
    ids: Sequence[int],
    masked: Sequence[bool],
    piece: Callable[[int], str],
    decode: Callable[[Sequence[int]], str],
) -> list[str]:
    """The text of each position of a draft ("" where masked), for the live view.

    Tokens are decoded one by one (``piece``, cached by the caller), except a
    character split across several byte tokens: its filled run is decoded
    together and shown at its first position. Half a character whose other
    bytes are still masked shows as "" rather than a replacement mark.
    """
    out = ["" if m else piece(i) for i, m in zip(ids, masked, strict=True)]
    for k, text in enumerate(out):
        if "\ufffd" not in text:
            continue
        out[k] = ""
        end = k + 1
        while end < len(ids) and end - k < _MAX_CHAR_TOKENS and not masked[end]:
            end += 1
            joined = decode(ids[k:end])
            if "\ufffd" not in joined:
                out[k] = joined
                out[k + 1 : end] = [""] * (end - k - 1)
                break
    return out


class OutputAssembler:
    """Committed ids in, engine events out, for one response."""

    def __init__(
        self,
        tokenizer: Any,
        request: ChatRequest,
        prompt_tokens: int,
        stop_strings: Sequence[str] = (),
    ) -> None:
        self.tokenizer = tokenizer
        self.parser = Qwen3StreamParser(request.tools, starts_in_reasoning=request.enable_thinking)
        self.prompt_tokens = prompt_tokens
        self.stop_strings = [s for s in stop_strings if s]
        self.ids: list[int] = []
        self.fills: list[tuple[float, int]] | None = []
        """Per id, its fill confidence and step (None once an entry point gave none)."""
        self._pieces: list[TokenPiece] | None = []  # the pieces of text not yet emitted
        self._read = 0  # ids[:_read] are fully emitted as text
        self._held = ""  # text not yet emitted because it may begin a stop string
        self._longest = max((len(s) for s in self.stop_strings), default=0)
        self.blocks = 0
        self.stopped = False
        """A stop string was found; the response is over."""

    def block(
        self,
        ids: list[int],
        steps: int | None,
        confidences: Sequence[float] | None = None,
        fill_steps: Sequence[int] | None = None,
    ) -> list[EngineEvent]:
        """Events for one committed block of ``ids`` (with each id's fill confidence and
        step where the decoder recorded them)."""
        self.ids.extend(ids)
        if self.fills is not None and confidences is not None and fill_steps is not None:
            self.fills.extend(zip(confidences, fill_steps, strict=True))
        else:
            self.fills = None
        text = self._new_text(final=False)
        text = self._cut_at_stop(text)
        events: list[EngineEvent] = list(self.parser.feed(text)) if text else []
        pieces = self._emitted_pieces(len(text))
        events.append(BlockCommitted(self.blocks, text, len(ids), steps, pieces))
        self.blocks += 1
        return events

    def finish(self, reason: FinishReason) -> list[EngineEvent]:
        """Events that end a response: held-back text, parser tail, usage, ``Finished``."""
        events: list[EngineEvent] = []
        if not self.stopped:
            text = self._cut_at_stop(self._new_text(final=True), final=True)
            if text:
                events.extend(self.parser.feed(text))
        events.extend(self.parser.finish())
        events.append(Usage(self.prompt_tokens, len(self.ids)))
        if self.parser.saw_tool_call and reason == "stop":
            reason = "tool_calls"
        events.append(Finished(reason))
        return events

    def _new_text(self, *, final: bool) -> str:
        start = max(0, self._read - _CONTEXT_TOKENS)
        before = self.tokenizer.decode(self.ids[start : self._read])
        full = self.tokenizer.decode(self.ids[start:])
        if not final and full.endswith("\ufffd"):
            return ""  # a character split across blocks: wait for the rest
        new = str(full[len(before) :]) if full.startswith(before) else str(full)
        self._note_pieces(start, before, new)
        self._read = len(self.ids)
        return new

    def _note_pieces(self, start: int, before: str, new: str) -> None:
        """Cut ``new`` (the text of ids[_read:]) into one piece per token, kept until emitted."""
        if self.fills is None or self._pieces is None:
            self._pieces = None
            return
        if self._read == len(self.ids):
            return  # nothing new (the end of a response that is already all out)
        lengths: list[int] = []
        last = 0
        for end in range(self._read + 1, len(self.ids) + 1):
            part = self.tokenizer.decode(self.ids[start:end])
            if not part.endswith("\ufffd") and part.startswith(before):
                last = max(last, min(len(part) - len(before), len(new)))
            lengths.append(last)
        lengths[-1] = len(new)
        previous = 0
        low: float | None = None
        for k, length in enumerate(lengths):
            confidence, step = self.fills[self._read + k]
            low = confidence if low is None else min(low, confidence)
            if length > previous:
                # a character split over byte tokens is one piece, as sure as its least sure byte
                self._pieces.append(TokenPiece(length - previous, low, step))
                previous, low = length, None

    def _emitted_pieces(self, size: int) -> list[TokenPiece] | None:
        """The pieces of the next ``size`` emitted characters (the rest stay pending)."""
        if self._pieces is None:
            return None
        out: list[TokenPiece] = []
        while size > 0 and self._pieces:
            piece = self._pieces.pop(0)
            if piece.chars > size:
                rest = TokenPiece(piece.chars - size, piece.confidence, piece.step)
                self._pieces.insert(0, rest)
                piece = TokenPiece(size, piece.confidence, piece.step)
            out.append(piece)
            size -= piece.chars
        return out if size == 0 else None

    def _cut_at_stop(self, text: str, *, final: bool = False) -> str:
        """``text`` up to the first stop string; a tail that could begin one is held back."""
        if self.stopped:
            return ""
        if not self.stop_strings:
            return text
        text, self._held = self._held + text, ""
        found = [hit for hit in (text.find(s) for s in self.stop_strings) if hit >= 0]
        if found:
            self.stopped = True
            return text[: min(found)]
        if not final:
            for size in range(min(len(text), self._longest - 1), 0, -1):
                tail = text[-size:]
                if any(s.startswith(tail) for s in self.stop_strings):
                    self._held, text = tail, text[:-size]
                    break
        return text
