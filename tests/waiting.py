"""How tests wait for things, and when a missing tool is a failure rather than a skip.

A busy machine (two cores shared with other jobs) makes every step slower by
an unknown factor, so tests never sleep a fixed time and then assert, and
never assert how long something took. They poll for the state they expect
with a generous deadline instead: a healthy run returns as soon as the state
is there, and a broken one fails with a message saying what never happened.

``in_ci()`` reads the ``CI`` variable once, the way CI services set it
(``CI=true``): ``0``/``false``/``no``/``off`` (any case) or empty or unset
mean not CI, and every other value (``1``, ``true``, ``yes``, a service's
name) means CI. ``scripts/test`` reads it the same way. Under CI a missing
tool (Docker, tmux, the real model server) fails the test: CI must run those
tests for real.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import NoReturn, TypeVar

import pytest

__all__ = [
    "PATIENCE",
    "async_wait_until",
    "env_flag",
    "in_ci",
    "missing",
    "need_program",
    "read_until",
    "wait_until",
    "within",
]

PATIENCE = 120.0
"""The default deadline in seconds: far longer than any healthy wait, even on a busy machine."""

_FALSE = {"", "0", "false", "no", "off"}

_T = TypeVar("_T")


def env_flag(name: str, environ: Mapping[str, str] | None = None) -> bool:
    """Whether the variable ``name`` is set to a true value (``0``/``false``/``no`` are not)."""
    value = (os.environ if environ is None else environ).get(name, "").strip().lower()
    # Some services set CI to their own name: any value not read as false counts as set.
    return value not in _FALSE


def in_ci(environ: Mapping[str, str] | None = None) -> bool:
    """True when the ``CI`` variable says so (``CI=false`` and ``CI=0`` do not)."""
    return env_flag("CI", environ)


def missing(what: str, why_ci_needs_it: str) -> NoReturn:
    """Skip because ``what`` is missing here; under CI fail instead, saying why CI needs it."""
    if in_ci():
        pytest.fail(f"{what}; {why_ci_needs_it}", pytrace=False)
    pytest.skip(what)


def need_program(program: str, package: str | None = None) -> None:
    """Skip when ``program`` is not on PATH; under CI fail, since scripts/install-system has it."""
    if shutil.which(program) is None:
        missing(
            f"{program} is not installed",
            f"scripts/install-system installs {package or program}; CI must run this test",
        )


def wait_until(
    predicate: Callable[[], bool],
    *,
    message: str,
    timeout: float = PATIENCE,
    interval: float = 0.05,
) -> None:
    """Return once ``predicate()`` is true; fail with ``message`` after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"waited {timeout:g} s for {message}; it never happened")
        time.sleep(interval)


async def async_wait_until(
    predicate: Callable[[], bool],
    *,
    message: str,
    timeout: float = PATIENCE,
    interval: float = 0.02,
) -> None:
    """``wait_until`` for a coroutine: polls without blocking the event loop."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"waited {timeout:g} s for {message}; it never happened")
        await asyncio.sleep(interval)


async def within(awaitable: Awaitable[_T], *, message: str, timeout: float = PATIENCE) -> _T:
    """The result of ``awaitable``; fails with ``message`` when it takes over ``timeout`` s."""
    try:
        return await asyncio.wait_for(awaitable, timeout)
    except TimeoutError:
        raise AssertionError(f"waited {timeout:g} s for {message}; it never happened") from None


async def read_until(
    stream: asyncio.StreamReader,
    marker: bytes,
    *,
    message: str,
    timeout: float = PATIENCE,
) -> bytes:
    """Everything read from ``stream`` up to and including the chunk holding ``marker``.

    Fails with ``message`` when the stream ends first (the process exited) or
    after ``timeout`` seconds; the failure shows what was read.
    """
    seen = b""
    deadline = time.monotonic() + timeout
    while marker not in seen:
        left = deadline - time.monotonic()
        try:
            chunk = await asyncio.wait_for(stream.read(4096), max(left, 0.001))
        except TimeoutError:
            raise AssertionError(
                f"waited {timeout:g} s for {message}; it never came. Read so far: {seen[-2000:]!r}"
            ) from None
        if not chunk:
            raise AssertionError(f"the stream ended before {message}. Read: {seen[-2000:]!r}")
        seen += chunk
    return seen
