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

The request's body and those notices are ``request.py``; reading a response
into events, and the ways one ends badly, ``response.py``.
"""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import AsyncGenerator
from contextlib import aclosing
from typing import TYPE_CHECKING, Any

import httpx

from clover_code.engine.base import CONTROL_KEYS, ChatRequest, EngineWarning
from clover_code.engine.events import EngineEvent, Failed, Finished, ImagesDropped
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
from clover_code.engine.remote.request import SERVE_OWNER, request_body, server_notices
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
from clover_code.errors import EngineError

if TYPE_CHECKING:
    # Reading a stream (the response, its chunks, the Qwen3 parser, SSE) is loaded by the
    # first request: an app's session is open, and shown, before any.
    from clover_code.engine.remote.chunks import RawParsing

__all__ = ["OpenAIBackend", "api_root"]


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
    """Said once when the engine opens: what the server may or cannot apply
    (``request.server_notices``)."""

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
        self.notices = server_notices(self.controls, local_only)
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
        body = request_body(
            request,
            model=self.model,
            output_limit=self.output_limit,
            controls=self.controls,
            drafts=self.drafts,
            remask=self.remask if self._remask_served else None,
        )
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

    async def _attempt(
        self, body: dict[str, Any], request: ChatRequest
    ) -> AsyncGenerator[EngineEvent, None]:
        """One POST. Raises ``RetryAttempt`` only while nothing has been yielded."""
        from clover_code.engine.remote.chunks import ChunkDecoder
        from clover_code.engine.remote.response import (
            failed_events,
            interrupted_events,
            read_events,
        )

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
                async with aclosing(read_events(response, decoder)) as batches:
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
                for event in interrupted_events(self.base_url, decoder, exc):
                    yield event
                return
        except StreamProblem as problem:
            for event in failed_events(
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
            for event in interrupted_events(self.base_url, decoder):
                yield event
            return
        for event in decoder.finish():
            yield event
        yield Finished(decoder.finish_reason())
