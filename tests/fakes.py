"""Fakes for tests, named as such: a scripted backend that replays engine events.

``ScriptedBackend`` stands in for a model server where a real one cannot give
deterministic answers; the event shapes it replays are the ones the real
backends produce (one ``BlockCommitted`` per 32-token block, parsed deltas,
``ToolCallEnd`` with parsed arguments, ``Usage``, ``Finished``).
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import AsyncGenerator, Sequence
from typing import Any

from clover_code.engine import events as ev
from clover_code.engine.base import ChatRequest
from clover_code.errors import EngineError

_ids = itertools.count()


def text_response(text: str, *, reasoning: str = "", block_chars: int = 64) -> list[Any]:
    """Events of a response that only answers (and optionally thinks first)."""
    events: list[Any] = []
    block = 0
    for source, kind in ((reasoning, ev.ReasoningDelta), (text, ev.ContentDelta)):
        for start in range(0, len(source), block_chars):
            piece = source[start : start + block_chars]
            events.append(kind(piece))
            events.append(ev.BlockCommitted(block, piece, max(1, len(piece) // 2)))
            block += 1
    events.append(ev.Usage(0, sum(e.token_count for e in events if hasattr(e, "token_count"))))
    events.append(ev.Finished("stop"))
    return events


def tool_response(*calls: tuple[str, dict[str, Any]], text: str = "") -> list[Any]:
    """Events of a response that (after optional text) calls tools."""
    events: list[Any] = []
    if text:
        events += [ev.ContentDelta(text), ev.BlockCommitted(0, text, 8)]
    for index, (name, arguments) in enumerate(calls):
        call_id = f"call_{next(_ids)}"
        events.append(ev.ToolCallStart(index, call_id, name))
        events.append(ev.ToolCallEnd(index, call_id, name, arguments))
        events.append(ev.BlockCommitted(index + 1, f"<tool_call>{name}</tool_call>", 16))
    events.append(ev.Usage(0, 16 * len(calls)))
    events.append(ev.Finished("tool_calls"))
    return events


class ScriptedBackend:
    """A fake ``Backend``: each ``stream`` call replays the next scripted response.

    An item in a response may be an ``asyncio.Event`` (the stream waits for it)
    or a float (the stream sleeps that long), to script slow or hanging models.
    """

    name = "scripted"
    block_size = 32
    notices: tuple[str, ...] = ()

    def __init__(
        self,
        responses: Sequence[list[Any]],
        model: str = "fake-model",
        summary: str | None = None,
    ) -> None:
        self.responses = list(responses)
        self.model = model
        self.requests: list[ChatRequest] = []
        self.summary_requests: list[ChatRequest] = []
        self.summary = summary
        self.closed = False
        self.failure: EngineError | None = None

    async def stream(self, request: ChatRequest) -> AsyncGenerator[ev.EngineEvent, None]:
        system = str(request.messages[0].get("content", "")) if request.messages else ""
        if self.summary is not None and system.startswith("You are summarising"):
            # Compaction requests get the scripted summary, numbered so tests
            # can tell successive summaries apart.
            self.summary_requests.append(request)
            for event in text_response(f"{self.summary} #{len(self.summary_requests)}"):
                yield event
            return
        self.requests.append(request)
        if not self.responses:
            raise AssertionError("the scripted backend ran out of responses")
        for item in self.responses.pop(0):
            if isinstance(item, asyncio.Event):
                await item.wait()
            elif isinstance(item, float):
                await asyncio.sleep(item)
            else:
                if isinstance(item, ev.Failed):
                    self.failure = item.error
                yield item

    async def check(self) -> None:
        return None

    async def aclose(self) -> None:
        self.closed = True
