"""A fake block-diffusion engine, named as such: scripted blocks of tokens whose fill
confidences a test chooses, parsed by the real Qwen3 parser.

The local engine (``engine/local/diffusion/chat.py``) commits a block of tokens,
feeds its text to ``Qwen3StreamParser`` (with the request's tools) and emits the
parsed events followed by a ``BlockCommitted`` holding the block's pieces; this
does the same with tokens given as text, so what the turn makes of them (the
shading of an edit's lines) can be checked exactly. No model runs: the tiny
checkpoint tests (``tests/tiny_model.py``) cover the real decoder.
"""

from __future__ import annotations

import re
from collections.abc import AsyncGenerator, Sequence

from clover_code.engine import events as ev
from clover_code.engine.base import ChatRequest
from clover_code.engine.qwen3.parser import Qwen3StreamParser
from clover_code.protocol.confidence import TokenPiece
from tests.fakes import ScriptedBackend

__all__ = ["FakeDiffusionBackend", "Token", "answer", "blocks", "expand", "tokens"]

Token = tuple[str, float, int]
"""A committed token: its text, the confidence it was filled with, the step that filled it."""


def tokens(*parts: tuple[str, float] | str, step: int = 1) -> list[Token]:
    """Tokens from ``(text, confidence)`` pairs, or plain text filled at 0.99; a token
    below 0.5 is filled a step later than ``step`` (the rule fills the sure ones first)."""
    out: list[Token] = []
    for part in parts:
        text, confidence = (part, 0.99) if isinstance(part, str) else part
        out.append((text, confidence, step if confidence >= 0.5 else step + 1))
    return out


def blocks(all_tokens: Sequence[Token], size: int = 32) -> list[list[Token]]:
    """``all_tokens`` cut into committed blocks of ``size`` tokens."""
    return [list(all_tokens[i : i + size]) for i in range(0, len(all_tokens), size)]


class FakeDiffusionBackend(ScriptedBackend):
    """Each ``stream`` replays the next scripted response, a list of committed blocks."""

    name = "fake-diffusion"

    def __init__(self, responses: Sequence[list[list[Token]]]) -> None:
        super().__init__([])
        self.raw = list(responses)

    async def stream(self, request: ChatRequest) -> AsyncGenerator[ev.EngineEvent, None]:
        self.requests.append(request)
        if not self.raw:
            raise AssertionError("the fake diffusion backend ran out of responses")
        parser = Qwen3StreamParser(request.tools, starts_in_reasoning=request.enable_thinking)
        count = 0
        for number, block in enumerate(self.raw.pop(0)):
            text = "".join(part for part, _, _ in block)
            for event in parser.feed(text):
                yield event
            pieces = [TokenPiece(len(part), confidence, step) for part, confidence, step in block]
            yield ev.BlockCommitted(number, text, len(block), max(s for _, _, s in block), pieces)
            count += len(block)
        for event in parser.finish():
            yield event
        yield ev.Usage(0, count)
        yield ev.Finished("tool_calls" if parser.saw_tool_call else "stop")


def answer(text: str) -> list[list[Token]]:
    """A response that thinks briefly and answers ``text``, every token sure."""
    return blocks(tokens("ok", "</think>", "\n\n", *re.findall(r"\S+|\s+", text)))


def expand(pieces: Sequence[TokenPiece]) -> list[tuple[float, int]]:
    """Per character, the confidence and step of the piece holding it."""
    return [(piece.confidence, piece.step) for piece in pieces for _ in range(piece.chars)]
