"""The suite's own waiting, CI and golden-file helpers: they must be able to fail."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from tests.waiting import (
    async_wait_until,
    in_ci,
    need_program,
    read_until,
    wait_until,
    within,
)


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


def test_a_missing_program_skips_here_and_fails_in_ci(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # nothing on it
    monkeypatch.setenv("CI", "false")
    with pytest.raises(pytest.skip.Exception, match="tmux is not installed"):
        need_program("tmux")
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="scripts/install-system installs tmux"):
        need_program("tmux")


def test_a_missing_golden_file_never_passes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.integration import test_acp_harness as harness

    monkeypatch.setattr(harness, "GOLDEN", tmp_path)
    monkeypatch.delenv("UPDATE_GOLDEN", raising=False)
    messages = [{"dir": "client->agent", "msg": {"method": "initialize"}}]
    monkeypatch.setenv("CI", "1")
    with pytest.raises(pytest.fail.Exception, match="is missing; CI compares"):
        harness.check_golden("seq.json", messages)
    assert not (tmp_path / "seq.json").exists()
    monkeypatch.setenv("CI", "false")
    with pytest.raises(pytest.xfail.Exception, match=r"wrote .*seq\.json"):
        harness.check_golden("seq.json", messages)
    harness.check_golden("seq.json", messages)  # the next run compares, and passes
    with pytest.raises(AssertionError, match="differs"):
        harness.check_golden("seq.json", [*messages, *messages])
