"""The suite's own waiting and CI helpers: they must be able to fail."""

from __future__ import annotations

import asyncio

import pytest

from tests.waiting import async_wait_until, in_ci, read_until, wait_until, within


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("", False),
        ("0", False),
        ("false", False),
        ("False", False),
        ("no", False),
        ("off", False),
        (" false ", False),
        ("1", True),
        ("true", True),
        ("TRUE", True),
        ("yes", True),
        ("github-actions", True),
    ],
)
def test_ci_is_read_from_its_value_not_its_presence(value: str, expected: bool) -> None:
    assert in_ci({"CI": value}) is expected


def test_no_ci_variable_is_not_ci() -> None:
    assert in_ci({}) is False


def test_wait_until_fails_with_what_was_awaited() -> None:
    with pytest.raises(AssertionError, match=r"waited 0\.1 s for the flag to be set"):
        wait_until(lambda: False, message="the flag to be set", timeout=0.1)
    wait_until(lambda: True, message="nothing", timeout=0)


async def test_async_waits_fail_with_what_was_awaited() -> None:
    with pytest.raises(AssertionError, match=r"waited 0\.1 s for the event"):
        await async_wait_until(lambda: False, message="the event", timeout=0.1)
    with pytest.raises(AssertionError, match=r"waited 0\.1 s for the sleeper"):
        await within(asyncio.sleep(10), message="the sleeper", timeout=0.1)
    assert await within(asyncio.sleep(0, result=7), message="a result") == 7


async def test_read_until_fails_when_the_stream_ends_first() -> None:
    stream = asyncio.StreamReader()
    stream.feed_data(b"partial output")
    stream.feed_eof()
    with pytest.raises(AssertionError, match=r"ended before the marker\. Read: .*partial"):
        await read_until(stream, b"MARKER", message="the marker")
    done = asyncio.StreamReader()
    done.feed_data(b"one MARKER two")
    assert (await read_until(done, b"MARKER", message="the marker")).startswith(b"one MARKER")
