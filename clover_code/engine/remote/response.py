"""Reading one response of a chat-completions server into engine events.

``read_events`` reads a 200 response, streamed as server-sent events or sent
whole as one JSON completion by a server that ignored ``stream: true``, and
gives the events of each chunk (``chunks.py`` decodes them); what the stream
carries that is not a chunk (an error object, text that is not JSON) is raised
as ``StreamProblem``. ``interrupted_events`` and ``failed_events`` are the
ways a response that began can end badly. Loaded with the first request
(``OpenAIBackend`` imports it then), like the chunks and SSE it reads.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from contextlib import aclosing

import httpx

from clover_code.engine.events import EngineEvent, Failed, Finished, FinishReason
from clover_code.engine.remote.chunks import ChunkDecoder, ServerStreamError
from clover_code.engine.remote.retry import StreamProblem, error_message
from clover_code.engine.remote.sse import iter_sse
from clover_code.errors import EngineError, StreamInterrupted
from clover_code.protocol.json_text import loads_bounded

__all__ = ["failed_events", "interrupted_events", "read_events"]

_DONE = b"[DONE]"


async def read_events(
    response: httpx.Response, decoder: ChunkDecoder
) -> AsyncGenerator[list[EngineEvent] | None, None]:
    """The events of each non-empty chunk; ``None`` once ``[DONE]`` arrives."""
    # aiter_raw skips httpx's per-chunk decoder pipeline; an encoded body
    # (we ask for identity, but a proxy may not listen) still goes through it.
    if response.headers.get("content-type", "").startswith("application/json"):
        # A server that ignored ``stream: true`` sent one whole completion.
        content = await response.aread()
        try:
            yield decoder.feed_completion(loads_bounded(content))
        except (ValueError, TypeError, AttributeError, IndexError, KeyError) as exc:
            raise StreamProblem(content, f"not a chat completion: {exc}") from exc
        yield None
        return
    encoding = response.headers.get("content-encoding", "identity")
    raw = response.aiter_raw() if encoding == "identity" else response.aiter_bytes()
    async with aclosing(iter_sse(raw)) as sse_events:
        async for sse in sse_events:
            data = sse.data
            if data == _DONE:
                # Read on to the end of the body (normally just the final
                # empty HTTP chunk) so the connection can be reused.
                yield None
                async for _ in sse_events:
                    pass
                return
            if sse.event == "error":
                raise StreamProblem(data, error_message(data), server_error=True)
            try:
                chunk = loads_bounded(data)
            except ValueError as exc:
                raise StreamProblem(data, f"not JSON: {exc}") from exc
            try:
                events = decoder.feed(chunk)
            except ServerStreamError as exc:
                raise StreamProblem(data, exc.message, server_error=True) from exc
            except (TypeError, AttributeError, IndexError, KeyError) as exc:
                raise StreamProblem(data, f"unexpected shape: {exc}") from exc
            if events:
                yield events


def interrupted_events(
    base_url: str, decoder: ChunkDecoder, exc: httpx.RequestError | None = None
) -> list[EngineEvent]:
    """The events that end a response whose stream broke after output began: what
    arrived is kept, then ``Failed(StreamInterrupted, partial=True)``."""
    events = decoder.interrupt()
    blocks = decoder.grouper.blocks
    after = f"after {blocks} block{'s' if blocks != 1 else ''}"
    if isinstance(exc, httpx.TimeoutException):
        message = (
            f"the server at {base_url} stopped sending {after} and timed out; "
            "the partial answer is kept"
        )
    else:
        message = f"the connection to {base_url} dropped {after}; the partial answer is kept"
    error = StreamInterrupted(message)
    events.append(Failed(error, partial=True))
    events.append(Finished("interrupted"))
    return events


def failed_events(
    error: EngineError, decoder: ChunkDecoder, output_begun: bool
) -> list[EngineEvent]:
    """The events that end a response with ``error``; partial when output had begun."""
    reason: FinishReason = "error"
    events: list[EngineEvent] = []
    if output_begun:
        events.extend(decoder.interrupt())
        reason = "interrupted"
    events.append(Failed(error, partial=output_begun))
    events.append(Finished(reason))
    return events
