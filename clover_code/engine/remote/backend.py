"""The remote backend: any OpenAI-compatible chat-completions server over HTTP.

Works with SGLang (the recommended server for Clover), vLLM, llama.cpp's
``llama-server``, llama-cpp-python, and hosted OpenAI-style APIs.

Base URL rule: the API root is ``base_url`` without a trailing slash, with
``/v1`` appended unless it already ends in ``/v1``. So ``http://host:30000``,
``http://host:30000/`` and ``http://host:30000/v1`` all mean
``http://host:30000/v1``, and requests go to ``{root}/chat/completions`` and
``{root}/models``.

Retries live here and nowhere else: connection failures, timeouts, 408, 429
(honouring ``Retry-After``) and 5xx are retried with exponential backoff and
jitter, but only before the first output event of a response. After output has
begun a broken stream is reported as ``Failed(StreamInterrupted, partial=True)``
and ``Finished("interrupted")``; what arrived is kept. A stream that closes
empty is asked once more without streaming, because some servers
(llama-cpp-python) hide the real error, e.g. a context overflow, that way.
A server that ignores ``stream: true`` and sends one JSON completion works too.

A request without ``max_tokens`` gets a default from the context window
(``max_tokens.py``); a server that refuses it is asked again without it. A
request whose images the server refuses (a model that takes none: a client
error naming images) is asked again at once with the images left out, after an
``ImagesDropped`` event saying so.

Decoding controls a server applies (the repetition, presence and frequency
penalties) are sent with every request: the configured ones, then a
request's own. An SGLang server in dLLM mode skips its sampler, so they have
no effect there; ``notices`` says so once, and names the settings that only
a local engine applies, so nothing is dropped silently.

Re-denoising (``remask``) is a ``clover-code serve`` extension: it is sent in
the request's ``clover`` object only when the server lists its model as owned
by clover-code; any other server cannot do it, and ``notices`` says it is off.
"""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import AsyncGenerator
from contextlib import aclosing
from typing import TYPE_CHECKING, Any

import httpx

from clover_code.engine.base import CONTROL_KEYS, ChatRequest, EngineWarning
from clover_code.engine.events import EngineEvent, Failed, Finished, FinishReason, ImagesDropped
from clover_code.engine.messages import image_count, text_only
from clover_code.engine.remote.endpoint import (
    ServedModel,
    is_loopback,
    list_served,
    pick_model,
    served_window,
)
from clover_code.engine.remote.endpoint import api_root as api_root
from clover_code.engine.remote.max_tokens import OutputLimit
from clover_code.engine.remote.retry import (
    BackoffPolicy,
    ImagesRefused,
    RetryAttempt,
    StreamProblem,
    error_for_status,
    error_for_transport,
    error_message,
    is_retryable_status,
    parse_retry_after,
)
from clover_code.errors import (
    EngineError,
    StreamInterrupted,
)
from clover_code.protocol.json_text import loads_bounded

if TYPE_CHECKING:
    # Reading a stream (the chunks, the Qwen3 parser, SSE) is loaded by the first
    # request: an app's session is open, and shown, before any.
    from clover_code.engine.remote.chunks import ChunkDecoder, RawParsing

__all__ = ["OpenAIBackend", "api_root"]

_DONE = b"[DONE]"


class OpenAIBackend:
    """A ``Backend`` that streams from an OpenAI-compatible server.

    ``raw_parsing`` decides what happens to ``content`` text: ``"always"``
    parses it as raw Qwen3 output that starts inside reasoning (a server with
    no reasoning or tool parser); ``"auto"`` understands explicit ``<think>``
    and ``<tool_call>`` tags in content while using native fields when the
    server sends them; ``"never"`` passes content through untouched.
    """

    name = "remote"
    notices: tuple[str, ...] = ()
    """Said once when the engine opens: what the server may or cannot apply (``_notices``)."""

    def __init__(
        self,
        base_url: str,
        model: str | None = None,
        *,
        api_key: str | None = None,
        block_size: int = 32,
        raw_parsing: RawParsing = "auto",
        max_retries: int = 4,
        backoff_base: float = 0.5,
        backoff_max: float = 20.0,
        connect_timeout: float = 10.0,
        read_timeout: float = 300.0,
        drafts: bool = False,
        context_window: int | None = None,
        controls: dict[str, float] | None = None,
        local_only: tuple[str, ...] = (),
        remask: tuple[float, int] | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        if block_size < 1:
            raise ValueError("block_size must be at least 1")
        self.base_url = api_root(base_url)
        self.model = model or ""
        """The served model; filled in by ``check()`` when none was given."""
        self.block_size = block_size
        self.raw_parsing: RawParsing = raw_parsing
        self.drafts = drafts
        """Ask a ``clover-code serve`` server for its denoising drafts (an extension)."""
        self.output_limit = OutputLimit(context_window)
        """The default max_tokens (none when ``context_window`` is None)."""
        self.controls = {k: v for k, v in (controls or {}).items() if k in CONTROL_KEYS}
        """Penalties sent with every request (a request's own take their place)."""
        self.notices = _notices(self.controls, local_only)
        self.remask = remask
        """(remask_below, remask_rounds) asked of a ``clover-code serve`` server; None: off."""
        self._remask_served = False
        """Whether the server re-denoises (it is ``clover-code serve``)."""
        self.backoff = BackoffPolicy(max_retries, backoff_base, backoff_max)
        self.answered = False
        """Whether the server answered in this run (then losing it is not "no engine")."""
        self.failure: EngineError | None = None
        """The error the last failed response ended with."""
        headers = {"Accept": "text/event-stream", "Accept-Encoding": "identity"}
        if api_key:
            headers["Authorization"] = f"Bearer {api_key}"
        verify: ssl.SSLContext | bool = True
        if self.base_url.startswith("http://"):
            # Loading the CA bundle costs ~50 ms per client and plain HTTP
            # never uses it (redirects are not followed). A context with no
            # CAs fails closed should TLS ever be attempted.
            verify = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        self._client = httpx.AsyncClient(
            headers=headers,
            timeout=httpx.Timeout(read_timeout, connect=connect_timeout),
            transport=transport,
            verify=verify,
            # HTTP(S)_PROXY is honoured for remote servers, but a proxy never
            # reaches a model server on this machine.
            trust_env=not is_loopback(self.base_url),
        )

    # -- Backend protocol -------------------------------------------------------

    async def check(self) -> None:
        """Make sure the server is reachable and serves ``model`` (pick one if unset)."""
        self.model = await pick_model(self._client, self.base_url, self.model)
        self.answered = True
        if self.remask is not None and not self._remask_served:
            served = {m.id: m.owned_by for m in await self.served()}
            self._remask_served = served.get(self.model) == SERVE_OWNER
            if not self._remask_served:
                self.notices = (
                    *self.notices,
                    EngineWarning(
                        f"Re-denoising (remask_below) is off: the server at {self.base_url} "
                        "is not clover-code serve, and only clover-code serve or a local "
                        "engine re-denoises."
                    ),
                )

    async def aclose(self) -> None:
        """Close the HTTP connection pool."""
        await self._client.aclose()

    # -- what the server serves ------------------------------------------------

    async def served(self) -> list[ServedModel]:
        """The models the server lists now, with the windows they report."""
        return await list_served(self._client, self.base_url)

    async def served_window(self, model: str) -> int | None:
        """The context window the server reports for ``model`` (None: it does not say)."""
        return await served_window(self._client, self.base_url, model)

    async def stream(self, request: ChatRequest) -> AsyncGenerator[EngineEvent, None]:
        """Stream one response as engine events; never raises for engine trouble."""
        if not self.model:
            try:
                await self.check()
            except EngineError as exc:
                self.failure = exc
                yield Failed(exc)
                yield Finished("error")
                return
        body = self._request_body(request)
        attempt = 0
        while True:
            try:
                # aclosing: when our consumer stops early, the inner generator
                # (and with it the HTTP response) closes now, not at GC time.
                async with aclosing(self._attempt(body, request)) as events:
                    async for event in events:
                        if isinstance(event, Failed):
                            self.failure = event.error
                        yield event
                return
            except RetryAttempt as retry:
                if retry.without_images:
                    body = {**body, "messages": text_only(body["messages"])}
                    yield ImagesDropped(retry.error.message)
                    continue
                if retry.without_max_tokens:
                    body = {k: v for k, v in body.items() if k != "max_tokens"}
                    continue
                if attempt >= self.backoff.max_retries:
                    self.failure = retry.error
                    yield Failed(retry.error)
                    yield Finished("error")
                    return
                attempt += 1
                if retry.unstreamed and body["stream"]:
                    # Some servers (llama-cpp-python) answer a failing streamed
                    # request with an empty 200; unstreamed, the same request
                    # returns the real error (or a whole completion).
                    body = {k: v for k, v in body.items() if k != "stream_options"}
                    body["stream"] = False
                    continue
                await asyncio.sleep(self.backoff.delay(attempt - 1, retry.retry_after))

    # -- one HTTP attempt -----------------------------------------------------------

    def _request_body(self, request: ChatRequest) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": request.model or self.model,
            "messages": request.messages,
            "stream": True,
            # continuous_usage_stats (vLLM, SGLang) puts the cumulative token
            # count on every chunk, which gives exact block sizes; servers that
            # do not know it send usage once at the end.
            "stream_options": {"include_usage": True, "continuous_usage_stats": True},
            # SGLang and vLLM pass these to the chat template; others ignore them.
            "chat_template_kwargs": {"enable_thinking": request.enable_thinking},
        }
        if request.tools:
            body["tools"] = [tool.openai() for tool in request.tools]
        if request.max_tokens is not None:
            body["max_tokens"] = request.max_tokens
        elif (default := self.output_limit.default_for(body)) is not None:
            body["max_tokens"] = default
        if request.temperature is not None:
            body["temperature"] = request.temperature
        if request.stop:
            body["stop"] = list(request.stop)
        for key, value in {**self.controls, **request.controls}.items():
            if key in CONTROL_KEYS:
                body[key] = value
        clover: dict[str, Any] = {}
        if self.drafts:
            clover["drafts"] = True
        if self.remask is not None and self._remask_served:
            clover["remask_below"], clover["remask_rounds"] = self.remask
        if clover:
            body["clover"] = clover
        return body

    async def _attempt(
        self, body: dict[str, Any], request: ChatRequest
    ) -> AsyncGenerator[EngineEvent, None]:
        """One POST. Raises ``RetryAttempt`` only while nothing has been yielded."""
        from clover_code.engine.remote.chunks import ChunkDecoder

        decoder = ChunkDecoder(
            block_size=self.block_size,
            raw_parsing=self.raw_parsing,
            enable_thinking=request.enable_thinking,
            tools=request.tools,
        )
        output_begun = False
        complete = False
        try:
            async with self._client.stream(
                "POST", f"{self.base_url}/chat/completions", json=body
            ) as response:
                status = response.status_code
                self.answered = True
                if status != 200:
                    content = await response.aread()
                    images = any(image_count(m) for m in body["messages"])
                    error = error_for_status(
                        status, content, url=self.base_url, model=body["model"], images=images
                    )
                    if isinstance(error, ImagesRefused):
                        raise RetryAttempt(error, without_images=True)
                    defaulted = request.max_tokens is None and "max_tokens" in body
                    if defaulted and self.output_limit.refused(status, error_message(content)):
                        raise RetryAttempt(error, without_max_tokens=True)
                    if is_retryable_status(status):
                        raise RetryAttempt(
                            error, parse_retry_after(response.headers.get("retry-after"))
                        )
                    yield Failed(error)
                    yield Finished("error")
                    return
                async with aclosing(self._read(response, decoder)) as batches:
                    async for events in batches:
                        if events is None:
                            complete = True
                            continue
                        output_begun = True
                        for event in events:
                            yield event
        except httpx.RequestError as exc:
            if complete or decoder.server_finish is not None:
                # The response had ended; only its tail (usage, [DONE]) was lost.
                pass
            elif not output_begun:
                attempts = self.backoff.max_retries + 1
                raise RetryAttempt(
                    error_for_transport(
                        exc, url=self.base_url, attempts=attempts, answered=self.answered
                    )
                ) from exc
            else:
                for event in self._interrupted(decoder, exc):
                    yield event
                return
        except StreamProblem as problem:
            for event in self._fail(
                problem.error(self.base_url, output_begun), decoder, output_begun
            ):
                yield event
            return
        if not complete and decoder.server_finish is None:
            # The connection closed cleanly but the response never ended.
            if not output_begun:
                raise RetryAttempt(
                    # A status came with the stream: there is an engine, and it broke off.
                    EngineError(
                        f"the server at {self.base_url} closed the stream before sending "
                        "anything; check the server's logs"
                    ),
                    unstreamed=True,
                )
            for event in self._interrupted(decoder):
                yield event
            return
        for event in decoder.finish():
            yield event
        yield Finished(decoder.finish_reason())

    async def _read(
        self, response: httpx.Response, decoder: ChunkDecoder
    ) -> AsyncGenerator[list[EngineEvent] | None, None]:
        """The events of each non-empty chunk; ``None`` once ``[DONE]`` arrives."""
        from clover_code.engine.remote.chunks import ServerStreamError
        from clover_code.engine.remote.sse import iter_sse

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

    # -- ways a stream can end badly ---------------------------------------------

    def _interrupted(
        self, decoder: ChunkDecoder, exc: httpx.RequestError | None = None
    ) -> list[EngineEvent]:
        events = decoder.interrupt()
        blocks = decoder.grouper.blocks
        after = f"after {blocks} block{'s' if blocks != 1 else ''}"
        if isinstance(exc, httpx.TimeoutException):
            message = (
                f"the server at {self.base_url} stopped sending {after} and timed out; "
                "the partial answer is kept"
            )
        else:
            message = (
                f"the connection to {self.base_url} dropped {after}; the partial answer is kept"
            )
        error = StreamInterrupted(message)
        events.append(Failed(error, partial=True))
        events.append(Finished("interrupted"))
        return events

    def _fail(
        self, error: EngineError, decoder: ChunkDecoder, output_begun: bool
    ) -> list[EngineEvent]:
        reason: FinishReason = "error"
        events: list[EngineEvent] = []
        if output_begun:
            events.extend(decoder.interrupt())
            reason = "interrupted"
        events.append(Failed(error, partial=output_begun))
        events.append(Finished(reason))
        return events


SERVE_OWNER = "clover-code"
"""The ``owned_by`` of a ``clover-code serve`` server's models."""


def _notices(controls: dict[str, float], local_only: tuple[str, ...]) -> tuple[str, ...]:
    """One sentence each: penalties sent (and where they do nothing), settings not applied."""
    out = []
    if controls:
        names = ", ".join(sorted(controls))
        one = len(controls) == 1
        out.append(
            f"{names} {'is' if one else 'are'} sent to the server with every request; an "
            "SGLang server in dLLM mode skips its sampler, so there "
            f"{'it has' if one else 'they have'} no effect."
        )
    if local_only:
        out.append(
            f"A remote server does not apply {', '.join(local_only)}: "
            f"{'it is a setting' if len(local_only) == 1 else 'they are settings'} of the "
            "local engines."
        )
    return tuple(out)
