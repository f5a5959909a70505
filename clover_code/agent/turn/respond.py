"""One model response of a turn: the turn's state, the stream, and the messages it leaves.

The turn loop (``agent/turn/loop.py``) builds the request; ``stream_response``
streams it into a ``TurnState``, passing the engine's events on as protocol
events and ending with a usage report. ``assistant_message`` turns what
arrived into the message the conversation keeps.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from contextlib import aclosing
from dataclasses import dataclass, field
from typing import Literal

from clover_code import protocol as p
from clover_code.agent.turn.confidence import NoConfidenceNotice, ResponseConfidence
from clover_code.agent.turn.context import TokenCounter
from clover_code.agent.turn.cost import Spend
from clover_code.agent.turn.tool_call import ToolCall
from clover_code.config.settings import Settings
from clover_code.engine import events as ev
from clover_code.engine.base import AssistantMessage, Backend, ChatRequest, Message
from clover_code.errors import CloverError
from clover_code.protocol.confidence import encode_pieces


@dataclass(slots=True)
class TurnState:
    """What a turn has produced so far, kept so an interruption loses nothing."""

    requests: int = 0
    malformed_streak: int = 0
    content: list[str] = field(default_factory=list)
    reasoning: list[str] = field(default_factory=list)
    calls: list[ToolCall] = field(default_factory=list)
    phase: Literal["idle", "streaming", "tools"] = "idle"
    final_text: str = ""
    stop_hook_active: bool = False
    """A Stop hook already sent the model back to work in this turn."""
    token_limit: bool = False
    """The last response stopped at the token limit."""
    images_refused: bool = False
    """The server refused the last request's images (it went again without them)."""


async def stream_response(
    backend: Backend,
    request: ChatRequest,
    state: TurnState,
    *,
    emit: p.Emit,
    settings: Settings,
    counter: TokenCounter,
    estimated_prompt: int,
    block: int,
    spend: Spend,
    on_call: Callable[[ToolCall], None] | None = None,
    no_confidence: NoConfidenceNotice | None = None,
) -> tuple[CloverError | None, int]:
    """Stream one model response into ``state``, its cost charged to ``spend``; return the
    failure, if any, and the number of the next diffusion block (``block`` is the first
    one's). ``on_call`` is given each tool call as soon as its arguments are complete;
    ``no_confidence`` hears whether the engine reported confidences."""
    failure: CloverError | None = None
    tokens = blocks = steps = step_tokens = 0
    first_block: float | None = None
    prompt_tokens = completion_tokens = cached_tokens = 0
    experts: float | None = None
    arrived = False  # anything came back: the request was read, and is paid for
    confidence = ResponseConfidence(settings.low_confidence)
    # Left "streaming" if cancelled mid-stream, so _close_partial knows.
    state.phase = "streaming"
    state.token_limit = False
    state.images_refused = False
    try:
        async with aclosing(backend.stream(request)) as stream:
            async for event in stream:
                arrived = True
                if isinstance(event, ev.BlockCommitted):
                    first_block = first_block or time.monotonic()
                    shade = confidence.committed(event)
                    tokens += event.token_count
                    blocks += 1
                    if event.steps:
                        steps += event.steps
                        step_tokens += event.token_count
                    emit(
                        p.BlockCommitted(
                            block=block,
                            text=event.text,
                            token_count=event.token_count,
                            steps=event.steps,
                            confidence=(
                                encode_pieces(event.pieces) if event.pieces is not None else None
                            ),
                        )
                    )
                    block += 1
                    if shade is not None:
                        emit(shade)
                elif isinstance(event, ev.ContentDelta):
                    state.content.append(event.text)
                    emit(p.ContentDelta(text=event.text))
                    shade = confidence.content(event)
                    if shade is not None:
                        emit(shade)
                elif isinstance(event, ev.ReasoningDelta):
                    state.reasoning.append(event.text)
                    emit(p.ReasoningDelta(text=event.text))
                elif isinstance(event, ev.ToolCallEnd):
                    call = ToolCall(
                        event.id,
                        event.name,
                        event.arguments,
                        parse_error=event.error,
                        confidence=confidence.call(),
                    )
                    state.calls.append(call)
                    if on_call is not None:
                        on_call(call)
                elif isinstance(event, ev.BlockDraft):
                    emit(
                        p.BlockDraft(
                            block=block,
                            step=event.step,
                            tokens=[
                                None if m else t
                                for t, m in zip(event.tokens, event.masked, strict=True)
                            ],
                            confidences=event.confidences,
                        )
                    )
                elif isinstance(event, ev.Usage):
                    prompt_tokens, completion_tokens = event.prompt_tokens, event.completion_tokens
                    experts, cached_tokens = event.experts_per_layer, event.cached_tokens
                elif isinstance(event, ev.ImagesDropped):
                    state.images_refused = True
                    emit(p.Notice(level="warning", text=images_dropped(event.reason)))
                elif isinstance(event, ev.Failed):
                    failure = event.error
                elif isinstance(event, ev.Finished) and event.reason == "length":
                    state.token_limit = True
                    emit(p.Notice(level="warning", text="the response hit the token limit."))
    except asyncio.CancelledError:
        # Interrupted: what the server read and generated so far is paid for all the same.
        if arrived:
            usage = ev.Usage(
                prompt_tokens or estimated_prompt,
                completion_tokens or tokens,
                cached_tokens=cached_tokens,
            )
            cost = spend.charge(backend.name, backend.model, usage)
            emit(_usage_report(usage, cost, settings.context_window))
        raise
    state.phase = "idle"
    answer = confidence.answer_event()
    if answer is not None:
        emit(answer)
    if no_confidence is not None:
        no_confidence.response_ended(confidence)
    elapsed = time.monotonic() - first_block if first_block else 0.0
    usage = ev.Usage(
        prompt_tokens or estimated_prompt, completion_tokens or tokens, cached_tokens=cached_tokens
    )
    # A request that failed before anything came back is not billed.
    unbilled = failure is not None and not prompt_tokens and not usage.completion_tokens
    cost = 0.0 if unbilled else spend.charge(backend.name, backend.model, usage)
    emit(
        _usage_report(usage, cost, settings.context_window).model_copy(
            update={
                "tokens_per_second": tokens / elapsed if elapsed > 0 else None,
                "blocks_per_second": blocks / elapsed if elapsed > 0 else None,
                "tokens_per_forward": step_tokens / steps if steps else None,
                "experts_per_layer": experts,
            }
        )
    )
    counter.reported(prompt_tokens, len(request.messages) - 1)
    return failure, block


def _usage_report(usage: ev.Usage, cost: float | None, window: int) -> p.UsageReport:
    """The usage event of one response, priced at ``cost`` (None: unknown)."""
    return p.UsageReport(
        prompt_tokens=usage.prompt_tokens,
        completion_tokens=usage.completion_tokens,
        context_window=window,
        cached_tokens=usage.cached_tokens,
        cost=None if cost is None else round(cost, 8),
    )


def wire_messages(messages: list[Message]) -> list[Message]:
    """The history as sent to the model (reasoning stays in the transcript only)."""
    return [_wire_message(m) for m in messages]


def _wire_message(message: Message) -> Message:
    if message["role"] != "assistant" or "reasoning_content" not in message:
        return message
    wire = message.copy()
    del wire["reasoning_content"]
    return wire


def assistant_message(state: TurnState, calls: list[ToolCall]) -> AssistantMessage:
    """The assistant message for what a response produced, with ``calls`` as its tool calls."""
    message: AssistantMessage = {"role": "assistant", "content": "".join(state.content)}
    if state.reasoning:
        message["reasoning_content"] = "".join(state.reasoning)
    if calls:
        message["tool_calls"] = [
            {
                "id": c.id,
                "type": "function",
                "function": {"name": c.name, "arguments": json.dumps(c.arguments)},
            }
            for c in calls
        ]
    return message


def images_dropped(reason: str) -> str:
    """The one sentence for a request whose images the server refused."""
    return (
        f"{reason}; the prompt was sent again without them (they stay in the conversation "
        "for a model that takes images)."
    )
