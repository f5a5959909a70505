"""Undone turns leave the conversation the model sees, unless it was compacted since."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from clover_code import protocol as p
from clover_code.agent.open import SessionOptions, open_session
from clover_code.agent.permissions.approval import RefuseApprover
from clover_code.config.settings import Settings
from tests.fakes import ScriptedBackend, text_response


async def test_forget_from_a_turn_and_not_after_a_compaction(
    repo: Path, make_settings: Callable[..., Settings]
) -> None:
    # "one" is long enough that its summary is shorter (compaction never grows).
    one = "one " + "and an answer long enough that a summary is shorter. " * 20
    backend = ScriptedBackend(
        [text_response(one), text_response("two"), text_response("three")], summary="S"
    )
    events: list[p.Event] = []
    session = await open_session(
        make_settings(),
        repo,
        SessionOptions(emit=events.append, approver=RefuseApprover(), backend=backend),
    )
    try:
        await session.run_turn("first")
        await session.run_turn("second")
        assert session.agent.forget_from(2)
        assert [m["content"] for m in session.agent.messages] == ["first", one]
        await session.run_turn("third")
        await session.agent.compact()
        assert not session.agent.forget_from(3)
    finally:
        await session.close()
