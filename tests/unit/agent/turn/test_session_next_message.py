"""A message sent as soon as a turn finished is taken, not refused as busy.

The front end sees TurnFinished before the session has saved the turn's
checkpoint; on a busy machine that save takes a while. Messages and commands
sent in that window wait for it instead of getting "the agent is busy".
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from clover_code import protocol as p
from clover_code.agent.checkpoints.store import CheckpointStore
from clover_code.config.settings import Settings
from tests.fakes import ScriptedBackend, text_response
from tests.unit.agent.turn.test_agent_loop import of_type, open_session
from tests.waiting import PATIENCE, async_wait_until


@pytest.fixture
def held_checkpoint(monkeypatch: pytest.MonkeyPatch) -> threading.Event:
    """Each turn's closing checkpoint waits until the returned event is set."""
    release = threading.Event()
    real_end_turn = CheckpointStore.end_turn

    def held(self: CheckpointStore, *args: Any, **kwargs: Any) -> Any:
        if not release.wait(timeout=PATIENCE):
            raise AssertionError("the held checkpoint was never released")
        return real_end_turn(self, *args, **kwargs)

    monkeypatch.setattr(CheckpointStore, "end_turn", held)
    return release


@pytest.mark.parametrize("op", [p.UserInput(text="second"), p.ShowDiff()])
async def test_an_op_right_after_turn_finished_waits_for_the_checkpoint(
    make_settings: Callable[..., Settings],
    repo: Path,
    held_checkpoint: threading.Event,
    op: p.Op,
) -> None:
    events: list[p.Event] = []
    backend = ScriptedBackend([text_response("one"), text_response("two")])
    session = await open_session(make_settings(), backend, repo, events)
    assert session.checkpoints is not None
    try:
        await session.submit(p.UserInput(text="first"))
        await async_wait_until(
            lambda: bool(of_type(events, p.TurnFinished)), message="the first turn to finish"
        )
        second = asyncio.create_task(session.submit(op))
        await asyncio.sleep(0)  # let it reach the wait (it must not answer "busy")
        held_checkpoint.set()
        await second
        assert [e.message for e in of_type(events, p.ErrorEvent)] == []
        expected = 2 if isinstance(op, p.UserInput) else 1
        await async_wait_until(
            lambda: (
                len(of_type(events, p.TurnFinished)) == expected
                and (expected == 2 or bool(of_type(events, p.DiffReport)))
            ),
            message="the second op to be carried out",
        )
    finally:
        held_checkpoint.set()
        await session.close()
    errors = [e.message for e in of_type(events, p.ErrorEvent)]
    assert errors == []
