"""A fake backend for tests with several agents at once: each request is answered from
the script of the conversation it belongs to.

``ScriptedBackend`` answers requests in the order they come, which is no order
at all when a parent and its children ask at the same time. ``RoutedBackend``
picks the script by the conversation's first user message (a child's prompt,
the parent's first prompt): ``routes`` maps a prefix of that message to the
responses for it, in order. Items are engine events, or an ``asyncio.Event``
(the stream waits for it) or a float (it sleeps), as in ``ScriptedBackend``.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator
from typing import Any

from clover_code.engine import events as ev
from clover_code.engine.base import ChatRequest
from clover_code.errors import EngineError

__all__ = ["RoutedBackend", "first_user_text"]


def first_user_text(request: ChatRequest) -> str:
    """The text of the request's first user message (the conversation's task)."""
    for message in request.messages:
        if message["role"] == "user":
            return str(message["content"])
    return ""


class RoutedBackend:
    """A fake ``Backend`` answering each conversation from its own script."""

    name = "scripted"
    block_size = 32
    notices: tuple[str, ...] = ()

    def __init__(self, routes: dict[str, list[list[Any]]], model: str = "fake-model") -> None:
        self.routes = {prefix: list(responses) for prefix, responses in routes.items()}
        self.model = model
        self.requests: dict[str, list[ChatRequest]] = {prefix: [] for prefix in routes}
        self.failure: EngineError | None = None
        self.open = 0
        self.most_open = 0

    def _route(self, request: ChatRequest) -> str:
        text = first_user_text(request)
        for prefix in sorted(self.routes, key=len, reverse=True):
            if text.startswith(prefix):
                return prefix
        raise AssertionError(f"no route for a conversation that starts {text[:80]!r}")

    async def stream(self, request: ChatRequest) -> AsyncGenerator[ev.EngineEvent, None]:
        route = self._route(request)
        self.requests[route].append(request)
        responses = self.routes[route]
        if not responses:
            raise AssertionError(f"the route {route!r} ran out of responses")
        self.open += 1
        self.most_open = max(self.most_open, self.open)
        try:
            for item in responses.pop(0):
                if isinstance(item, asyncio.Event):
                    await item.wait()
                elif isinstance(item, float):
                    await asyncio.sleep(item)
                else:
                    yield item
        finally:
            self.open -= 1

    async def check(self) -> None:
        return None

    async def aclose(self) -> None:
        return None
