"""Undo steps that all run even when one fails: a session's rollback and its close.

A session holds several things that must be released (MCP servers, the
sandbox, the engine, the transcript). Releasing one must not be skipped
because releasing another raised: ``run_all`` runs every step and raises the
first failure only after the last step ran.
"""

from __future__ import annotations

import contextlib
import inspect
import logging
from collections.abc import Awaitable, Callable

__all__ = ["Step", "Steps", "run_all"]

log = logging.getLogger("clover_code.session")

Step = Callable[[], Awaitable[object] | object]
"""A release action: a plain function or a coroutine function, without arguments."""


async def run_all(steps: list[tuple[str, Step]]) -> None:
    """Run every ``(name, step)`` in order; then raise the first failure, if any."""
    first: BaseException | None = None
    for name, step in steps:
        try:
            result = step()
            if inspect.isawaitable(result):
                await result
        except Exception as exc:  # the remaining steps still run
            log.warning("releasing the %s failed: %s", name, exc)
            first = first or exc
        else:
            log.debug("released the %s", name)
    if first is not None:
        raise first


class Steps:
    """What a session start opened so far, undone newest first if a later step fails."""

    def __init__(self) -> None:
        self._steps: list[tuple[str, Step]] = []

    def add(self, name: str, step: Step) -> None:
        """Remember how to release one thing that was just opened."""
        self._steps.append((name, step))

    async def rollback(self) -> None:
        """Release everything opened, newest first; failures are logged, not raised
        (the error that stopped the start is the one the caller must see)."""
        steps, self._steps = list(reversed(self._steps)), []
        with contextlib.suppress(Exception):  # logged by run_all; the start's error wins
            await run_all(steps)
