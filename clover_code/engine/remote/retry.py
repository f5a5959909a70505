"""The one table of retryable failures, backoff timing, and HTTP error mapping.

Only the remote backend retries, and only before the first output event of a
response: once text has reached the user, a retry would silently replace it.
This module holds the policy; ``remote.py`` owns the loop.
"""

from __future__ import annotations

import json
import random
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime

import httpx

from clover_code.errors import (
    AuthError,
    ContextOverflow,
    EngineError,
    EngineUnavailable,
    ModelNotFound,
    StreamInterrupted,
)
from clover_code.protocol.json_text import loads_bounded

__all__ = [
    "RETRYABLE_STATUS",
    "BackoffPolicy",
    "ImagesRefused",
    "RetryAttempt",
    "StreamProblem",
    "error_for_status",
    "error_for_transport",
    "error_message",
    "is_context_overflow",
    "is_images_refusal",
    "is_retryable_status",
    "parse_retry_after",
]

RETRYABLE_STATUS = frozenset({408, 409, 425, 429})
"""Client-side statuses worth retrying: timeouts, conflicts and rate limits.

Server errors (5xx) are retried too, except 501 and 505, which will not change
(see ``is_retryable_status``)."""

# How servers phrase "the prompt does not fit": OpenAI, vLLM, SGLang,
# llama.cpp and llama-cpp-python all use one of these.
# (Patterns as text: ``re`` compiles them on first use, which an error is, not at every
# start.)
_OVERFLOW = (
    r"(?i)context[ _]length|context[ _]window|context size|maximum context|too many tokens"
    r"|exceed|prompt is too long|input is too long"
)


# How servers refuse images for a text-only model: OpenAI ("image_url is only
# supported by certain models"), vLLM and SGLang ("not a multimodal model"),
# llama.cpp ("image input is not supported", "mmproj").
_IMAGES = r"(?i)\bimages?\b|image_url|image input|vision|multi-?modal|mmproj"


class ImagesRefused(EngineError):
    """The server refused a request because of the images it carried (a model that
    takes none); the backend asks again without them."""


def is_retryable_status(status: int) -> bool:
    """True for statuses where the same request may succeed a moment later."""
    return status in RETRYABLE_STATUS or (500 <= status < 600 and status not in (501, 505))


def is_context_overflow(message: str) -> bool:
    """True when a server's error text says the conversation is too long."""
    return re.search(_OVERFLOW, message) is not None


def is_images_refusal(status: int, message: str) -> bool:
    """True when a client error's text says the model takes no images."""
    refusal = 400 <= status < 500 and status not in (401, 403) and not is_retryable_status(status)
    return refusal and re.search(_IMAGES, message) is not None


def parse_retry_after(value: str | None, *, now: datetime | None = None) -> float | None:
    """Seconds to wait from a ``Retry-After`` header (seconds or an HTTP date)."""
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - (now or datetime.now(UTC))).total_seconds())


@dataclass(slots=True)
class BackoffPolicy:
    """Exponential backoff with jitter, capped, honouring ``Retry-After``."""

    max_retries: int = 4
    base: float = 0.5
    cap: float = 20.0
    rng: random.Random | None = None

    def delay(self, attempt: int, retry_after: float | None = None) -> float:
        """Seconds to sleep before retry number ``attempt`` (counted from 0)."""
        if retry_after is not None:
            # The server said when; waiting less would only earn another 429.
            return min(retry_after, self.cap)
        rng = self.rng or random
        # Jitter in [0.5, 1.0) of the exponential step spreads clients that
        # failed together without ever retrying instantly.
        step = min(self.cap, self.base * (2.0**attempt))
        return step * (0.5 + rng.random() / 2.0)


def error_message(body: bytes, limit: int = 300) -> str:
    """The human part of an error response body (OpenAI ``error.message`` or text)."""
    text = body.decode("utf-8", "replace").strip()
    try:
        payload = loads_bounded(text)
    except ValueError:
        payload = None
    message: object = None
    if isinstance(payload, dict):
        error = payload.get("error", payload)
        if isinstance(error, dict):
            message = error.get("message") or error.get("detail") or error.get("msg")
        elif isinstance(error, str):
            message = error
        if message is None:
            message = payload.get("message") or payload.get("detail")
    if not isinstance(message, str):
        message = text if message is None else json.dumps(message)
    message = " ".join(message.split())
    if len(message) > limit:
        message = message[: limit - 3] + "..."
    return message or "(no message)"


def error_for_status(
    status: int, body: bytes, *, url: str, model: str, images: bool = False
) -> EngineError:
    """Map a non-200 response of the chat endpoint to one clear error (``images``: the
    request carried images, so a refusal naming them is ``ImagesRefused``)."""
    message = error_message(body)
    where = f"the server at {url}"
    if status in (401, 403):
        return AuthError(
            f"{where} refused the API key (HTTP {status}: {message}); "
            "set --api-key or CLOVER_API_KEY"
        )
    if status in (400, 413, 422) and is_context_overflow(message):
        return ContextOverflow(
            f"the conversation does not fit the model's context window ({message}); "
            "compact or clear the conversation, or lower max_tokens"
        )
    if images and is_images_refusal(status, message):
        return ImagesRefused(
            f"{where} refused the images for the model {model!r} (HTTP {status}: {message})"
        )
    if status == 404:
        if "model" in message.lower():
            return ModelNotFound(
                f"{where} does not serve the model {model!r} ({message}); "
                "pick one it serves with --model"
            )
        return EngineUnavailable(
            f"{where} has no chat completions endpoint (HTTP 404: {message}); "
            "check that --base-url points at an OpenAI-compatible server"
        )
    if status == 429:
        return EngineError(
            f"{where} kept rate-limiting the request (HTTP 429: {message}); "
            "wait a minute and try again"
        )
    if is_retryable_status(status):
        return EngineError(
            f"{where} kept failing (HTTP {status}: {message}); check the server's logs"
        )
    return EngineError(
        f"{where} rejected the request (HTTP {status}: {message}); "
        "check the server's logs and the model's options"
    )


def error_for_transport(
    exc: httpx.RequestError, *, url: str, attempts: int, answered: bool = False
) -> EngineError:
    """Map a connection failure that outlasted the retries to one clear error.

    ``answered``: the server answered earlier in this run, so there is an engine
    and it broke off: the agent's error (exit 1), not "no engine" (exit 3)."""
    detail = str(exc) or type(exc).__name__
    tries = f" after {attempts} attempts" if attempts > 1 else ""
    if answered:
        return EngineError(
            f"the model server at {url} answered earlier in this run, then failed{tries} "
            f"({detail}); check that it is still running and read its logs"
        )
    if isinstance(exc, httpx.TimeoutException):
        return EngineUnavailable(
            f"the model server at {url} did not answer in time{tries} ({detail}); "
            "check that it is running and not overloaded, or raise the timeout"
        )
    return EngineUnavailable(
        f"cannot reach the model server at {url}{tries} ({detail}); start one "
        "(e.g. `python -m sglang.launch_server --model-path ...` or `llama-server -m ...`) "
        "or point --base-url at a running server"
    )


class RetryAttempt(Exception):
    """One attempt of a request failed before any output and may be retried."""

    def __init__(
        self,
        error: EngineError,
        retry_after: float | None = None,
        *,
        unstreamed: bool = False,
        without_max_tokens: bool = False,
        without_images: bool = False,
    ) -> None:
        super().__init__(error.message)
        self.error = error
        self.retry_after = retry_after
        self.unstreamed = unstreamed
        """Ask again without streaming: the stream hid what went wrong."""
        self.without_max_tokens = without_max_tokens
        """Ask again at once without the default max_tokens the server rejected."""
        self.without_images = without_images
        """Ask again at once with the images left out: the model takes none."""


class StreamProblem(Exception):
    """The stream carried a malformed chunk or a server error object."""

    def __init__(self, data: bytes, detail: str, *, server_error: bool = False) -> None:
        super().__init__(detail)
        self.data = data
        self.detail = detail
        self.server_error = server_error

    def error(self, url: str, output_begun: bool) -> EngineError:
        """The one error to report for this problem."""
        kept = "; the partial answer is kept" if output_begun else ""
        if self.server_error:
            if is_context_overflow(self.detail):
                return ContextOverflow(
                    f"the conversation does not fit the model's context window "
                    f"({self.detail}); compact or clear the conversation, or lower max_tokens"
                )
            message = (
                f"the server at {url} reported an error mid-stream ({self.detail}){kept}; "
                "check the server's logs"
            )
        else:
            sample = self.data[:80].decode("utf-8", "replace")
            message = (
                f"the server at {url} sent a malformed stream chunk ({self.detail}; "
                f"{sample!r}){kept}; check that it is an OpenAI-compatible server"
            )
        return StreamInterrupted(message) if output_begun else EngineError(message)
