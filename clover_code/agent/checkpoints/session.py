"""The session's checkpoint store (opened, or left off past its cap) and its undo
and diff ops on it (None when checkpoints are off)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

from clover_code import protocol as p
from clover_code.agent.checkpoints.store import CheckpointError, CheckpointStore
from clover_code.agent.checkpoints.workspace_check import checkpoint_overflow, snapshot_warning


def open_checkpoints(
    root: Path, data_dir: Path, session_id: str, cap: tuple[int, int], *, can_ask: bool
) -> tuple[CheckpointStore | None, str | None, list[str]]:
    """The store (None when checkpoints are off), why its snapshots wait for the
    user's yes (only when ``can_ask``), and the notices to show.

    Past the cap (most files, most bytes) a front end that can ask holds the
    snapshots until the user says yes; one that cannot goes on without
    checkpoints, saying so. Blocks: run it in a thread.
    """
    try:
        store = CheckpointStore(root, data_dir, session_id)
    except CheckpointError as exc:
        return None, None, [f"{exc} Undo and diff are off for this session."]
    over = checkpoint_overflow(root, *cap)
    if over is not None and not can_ask:
        return (
            None,
            None,
            [
                f"{over} Checkpoints are off for this session (no undo or diff, and no patch "
                "from them); raise the limit or start in a smaller folder to keep them."
            ],
        )
    held = over or snapshot_warning(root)
    if held is not None and not can_ask:
        return store, None, [f"{held} Snapshotting it anyway."]
    return store, held, []


async def undo(
    store: CheckpointStore | None,
    op: p.Undo,
    emit: p.Emit,
    forget: Callable[[int], bool],
    turn_back: Callable[[int], int | None] | None = None,
) -> None:
    """Revert the turns ``op`` names (or back to the last that changed files), drop them
    from the conversation with ``forget(first turn)`` where it can, and report.

    ``op.what`` picks files only, the conversation only (the turn to cut back to is
    ``turn_back(turns)``, needing no checkpoints), or both."""
    if op.what == "conversation":
        turn = turn_back(op.turns) if turn_back is not None else None
        if turn is None:
            emit(
                p.ErrorEvent(
                    message=f"cannot rewind {op.turns} turn(s): the conversation "
                    "holds fewer (or was compacted or cleared since)."
                )
            )
            return
        forgotten = forget(turn)
        emit(p.UndoDone(turns=op.turns, files=[], turn=turn, forgotten=forgotten, what=op.what))
        return
    if store is None:
        emit(p.ErrorEvent(message="undo is off: checkpoints could not be set up."))
        return
    try:
        turns, turn = op.turns, store.first_of_last(op.turns)
        if op.last_change:
            turns, turn = await asyncio.to_thread(store.turns_to_last_change)
            if not turns:
                emit(p.Notice(text="no turn of this session changed a file: nothing to undo."))
                return
        files = await asyncio.to_thread(store.undo, turns, op.force)
    except CheckpointError as exc:
        emit(p.ErrorEvent(message=str(exc)))
        return
    forgotten = op.what == "both" and turn is not None and forget(turn)
    # The newest ``turns`` turns of the conversation start at ``turn`` only if it holds them.
    held = turn is not None and turn_back is not None and turn_back(turns) == turn
    emit(
        p.UndoDone(
            turns=turns,
            files=files,
            turn=turn,
            forgotten=forgotten,
            what=op.what,
            still_held=op.what == "files" and held,
        )
    )


async def show_diff(store: CheckpointStore | None, emit: p.Emit) -> None:
    """Report what the agent changed since the session began."""
    if store is None:
        emit(p.ErrorEvent(message="diff is off: checkpoints could not be set up."))
        return
    try:
        diff, files = await asyncio.to_thread(store.diff_since_session_start)
    except CheckpointError as exc:
        emit(p.ErrorEvent(message=str(exc)))
        return
    emit(p.DiffReport(diff=diff, files=files))


def checkpoints_answer(allow: bool) -> str:
    """The notice after the user answered whether to snapshot a huge workspace."""
    state = "on: each turn can be undone" if allow else "off: /undo and /diff will not work"
    return f"Checkpoints are {state} in this session."


def held_notice(why: str) -> str:
    """The notice for a turn that starts before the user allowed snapshots."""
    return f"{why} Not snapshotted until you allow it: this turn cannot be undone."


async def auto_commit(store: CheckpointStore | None, subject: str, emit: p.Emit) -> None:
    """Commit what the agent changed, with ``subject`` as the message (``AutoCommit``)."""
    if store is None:
        emit(p.ErrorEvent(message="--auto-commit needs checkpoints, which are off."))
        return
    try:
        commit = await asyncio.to_thread(store.auto_commit, subject)
    except CheckpointError as exc:
        emit(p.ErrorEvent(message=str(exc)))
        return
    emit(p.AutoCommitted(commit=commit or None))
    text = f"committed the agent's changes as {commit[:12]}." if commit else "nothing to commit."
    emit(p.Notice(text=text))
