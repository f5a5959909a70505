"""What a chat-completions request asks of the server, and what the server applies.

``request_body`` builds the JSON of one request: the messages and tools, the
token limit (the request's, else a default from the context window), the
penalties a server applies, and the ``clover`` object that only a
``clover-code serve`` server (``SERVE_OWNER``) reads. ``server_notices`` says
once which settings a remote server does not apply, or applies to no effect.
"""

from __future__ import annotations

from typing import Any

from clover_code.engine.base import CONTROL_KEYS, ChatRequest
from clover_code.engine.remote.max_tokens import OutputLimit

__all__ = ["SERVE_OWNER", "request_body", "server_notices"]

SERVE_OWNER = "clover-code"
"""The ``owned_by`` of a ``clover-code serve`` server's models."""


def server_notices(controls: dict[str, float], local_only: tuple[str, ...]) -> tuple[str, ...]:
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


def request_body(
    request: ChatRequest,
    *,
    model: str,
    output_limit: OutputLimit,
    controls: dict[str, float],
    drafts: bool,
    remask: tuple[float, int] | None,
) -> dict[str, Any]:
    """The JSON body that asks for ``request``, streamed.

    ``model`` is asked for unless the request names its own, ``output_limit``
    gives a ``max_tokens`` the request leaves out, ``controls`` are the
    configured penalties (the request's own take their place); ``drafts`` and
    ``remask`` go in the ``clover`` object of a ``clover-code serve`` server
    (``remask`` is None for any other).
    """
    body: dict[str, Any] = {
        "model": request.model or model,
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
    elif (default := output_limit.default_for(body)) is not None:
        body["max_tokens"] = default
    if request.temperature is not None:
        body["temperature"] = request.temperature
    if request.stop:
        body["stop"] = list(request.stop)
    for key, value in {**controls, **request.controls}.items():
        if key in CONTROL_KEYS:
            body[key] = value
    clover: dict[str, Any] = {}
    if drafts:
        clover["drafts"] = True
    if remask is not None:
        clover["remask_below"], clover["remask_rounds"] = remask
    if clover:
        body["clover"] = clover
    return body
