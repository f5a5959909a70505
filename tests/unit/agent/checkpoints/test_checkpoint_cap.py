"""A workspace over the checkpoint cap (files or bytes, from the settings) never
holds up a session: a front end that cannot ask goes on without checkpoints and
says so, the app asks first, and counting stops as soon as the cap is passed."""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from clover_code import protocol as p
from clover_code.agent import open as factory
from clover_code.agent.checkpoints.workspace_check import checkpoint_overflow
from clover_code.config.settings import Settings
from tests.fakes import ScriptedBackend, text_response, tool_response
from tests.sessions import open_session
from tests.waiting import within


def _workspace(tmp_path: Path, files: int, size: int) -> Path:
    root = tmp_path / "big"
    root.mkdir()
    for n in range(files):
        (root / f"f{n:03}.txt").write_bytes(b"x" * size)
    return root


@pytest.mark.parametrize(
    ("cap", "named"),
    [({"checkpoint_max_files": 5}, "checkpoint_max_files"),
     ({"checkpoint_max_bytes": 1000}, "checkpoint_max_bytes")],
)  # fmt: skip
async def test_past_the_cap_headless_goes_on_without_checkpoints(
    make_settings: Callable[..., Settings], tmp_path: Path, cap: dict[str, int], named: str
) -> None:
    root = _workspace(tmp_path, files=8, size=200)
    backend = ScriptedBackend(
        [tool_response(("write_file", {"path": "new.txt", "content": "x\n"})), text_response("ok")]
    )
    events: list[p.Event] = []
    session = await open_session(
        make_settings(**cap), backend, root, events, approval_mode="full-auto"
    )
    finished = await session.run_turn("write new.txt")
    await session.close()
    assert finished.status == "completed"
    assert (root / "new.txt").read_text() == "x\n"
    assert session.checkpoints is None
    warnings = [e.text for e in events if isinstance(e, p.Notice) and e.level == "warning"]
    assert any(named in w and "Checkpoints are off for this session" in w for w in warnings)
    started = next(e for e in events if isinstance(e, p.SessionStarted))
    assert started.checkpoint_warning is None


async def test_past_the_cap_the_app_is_asked_before_any_snapshot(
    make_settings: Callable[..., Settings], tmp_path: Path
) -> None:
    root = _workspace(tmp_path, files=8, size=10)
    events: list[p.Event] = []
    session = await factory.open_session(
        make_settings(checkpoint_max_files=5),
        root,
        factory.SessionOptions(
            emit=events.append,
            approval_mode="full-auto",
            backend=ScriptedBackend([text_response("ok")]),
        ),
    )
    await session.run_turn("hi")
    await session.close()
    started = next(e for e in events if isinstance(e, p.SessionStarted))
    assert started.checkpoint_warning is not None
    assert "more than 5 files" in started.checkpoint_warning
    assert session.checkpoints is not None and session.checkpoints.turns == 0


async def test_counting_stops_once_the_cap_is_passed(tmp_path: Path) -> None:
    root = _workspace(tmp_path, files=6, size=10)
    # Walked last: reading this ignore file would block until someone writes it.
    (root / "zzz").mkdir()
    fifo = root / "zzz" / ".gitignore"
    os.mkfifo(fifo)
    try:
        over = await within(
            asyncio.to_thread(checkpoint_overflow, root, 5, 2**30),
            message="counting to stop at the cap",
            timeout=60,
        )
        assert over is not None and "more than 5 files" in over
    finally:
        with contextlib.suppress(OSError):  # let a blocked reader go
            os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))


def test_under_the_cap_nothing_is_said(tmp_path: Path) -> None:
    root = _workspace(tmp_path, files=4, size=10)
    (root / ".gitignore").write_text("ignored/\n")
    (root / "ignored").mkdir()
    for n in range(10):
        (root / "ignored" / f"{n}.bin").write_bytes(b"y" * 100)
    assert checkpoint_overflow(root, 5, 100) is None  # the ignored folder does not count
    assert checkpoint_overflow(root, 4, 39) is not None
