"""A conversation held open: ``async with Session(...) as s: async for e in s.send(text)``.

The session is the one every front end opens (``clover_code.agent.open``);
``send`` runs one turn and yields the protocol's typed events
(``clover_code.protocol``: ``ContentDelta``, ``ToolCallStarted``,
``ToolCallFinished``, ... and ``TurnFinished`` last). A turn goes on if the
loop stops reading early; ``interrupt`` stops it (its ``TurnFinished`` says
``interrupted``) and returns once it has ended. ``undo`` and
``set_approval_mode`` act between turns and raise the project's errors when
refused.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from types import TracebackType
from typing import Any

from clover_code import protocol as p
from clover_code.agent.open import Session as CoreSession
from clover_code.agent.open import SessionOptions, open_session
from clover_code.errors import CloverError, ConfigError, UsageError
from clover_code.sdk.approval import ApprovalCallback
from clover_code.sdk.options import HookTable, Options, ToolList

__all__ = ["Session"]


class _TurnEnd:
    """Put in the event queue when a turn's task has ended."""

    def __init__(self, turn: asyncio.Task[p.TurnFinished]) -> None:
        self.turn = turn


class Session:
    """One conversation with the agent in one project, for ``async with``.

    Takes the options ``clover_code.sdk.arun`` takes (``cwd``, ``can_use_tool``,
    ``tools``, ``hooks``, ``resume``, ``trust_project`` and settings); they are
    checked when the session opens."""

    def __init__(
        self,
        *,
        cwd: str | Path = ".",
        can_use_tool: ApprovalCallback | None = None,
        tools: ToolList = (),
        hooks: HookTable | None = None,
        resume: str | None = None,
        trust_project: bool = False,
        **options: Any,
    ) -> None:
        self._given: dict[str, Any] = {
            "cwd": cwd,
            "can_use_tool": can_use_tool,
            "tools": tuple(tools),
            "hooks": hooks,
            "resume": resume,
            "trust_project": trust_project,
        }
        self._options = options
        self._core: CoreSession | None = None
        self._queue: asyncio.Queue[p.Event | _TurnEnd] = asyncio.Queue()
        self._turn: asyncio.Task[p.TurnFinished] | None = None
        self.started: p.SessionStarted | None = None
        """The session's ``SessionStarted`` event (engine, model, sandbox, transcript)."""
        self.notices: list[str] = []
        """What the start said the user should know (warnings included)."""

    async def __aenter__(self) -> Session:
        await self.open()
        return self

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        await self.close()

    async def open(self) -> None:
        """Read the options and open the session (``async with`` does this)."""
        if self._core is not None:
            return
        read = await asyncio.to_thread(Options.read, self._options, **self._given)
        self._core = await open_session(
            read.settings,
            read.cwd,
            SessionOptions(
                emit=self._queue.put_nowait,
                approver=read.approver,
                approval_mode=read.approval,
                resume=read.resume,
                tools=read.tools,
                hooks=read.hooks,
                engine_notices=True,
            ),
        )
        for event in self._drain():
            if isinstance(event, p.SessionStarted):
                self.started = event
            elif isinstance(event, p.Notice):
                self.notices.append(event.text)

    @property
    def id(self) -> str:
        """The session's id (``resume=`` continues it later)."""
        return self._session().id

    @property
    def approval_mode(self) -> p.ApprovalMode:
        """The approval mode in force."""
        return self._session().agent.approval_mode

    async def send(self, text: str) -> AsyncIterator[p.Event]:
        """Run one turn on ``text``, yielding its events as they happen; the last is its
        ``TurnFinished``."""
        session = self._session()
        if self._running():
            raise UsageError(
                "a turn is still running; read its events to the end or interrupt() it first."
            )
        for _ in self._drain():
            pass  # what an earlier turn said after its reader stopped reading
        op = p.UserInput(text=text)
        turn = asyncio.create_task(session.run_turn(op))
        turn.add_done_callback(lambda ended: self._queue.put_nowait(_TurnEnd(ended)))
        self._turn = turn
        while True:
            event = await self._queue.get()
            if isinstance(event, _TurnEnd):
                if event.turn is turn:
                    break
                continue  # an earlier turn's, whose reader stopped early
            yield event
        error = None if turn.cancelled() else turn.exception()
        if error is not None:
            raise error

    async def interrupt(self) -> None:
        """Stop the running turn (what arrived so far is kept); returns once it ended."""
        turn = self._turn
        if turn is None or turn.done():
            return
        await self._session().submit(p.Interrupt())
        await asyncio.gather(turn, return_exceptions=True)

    async def undo(
        self,
        turns: int = 1,
        *,
        what: p.RewindWhat = "both",
        force: bool = False,
        last_change: bool = False,
    ) -> p.UndoDone | None:
        """Undo the last ``turns`` turns: the files they changed, the conversation, or
        both (``what``); None when no turn changed a file (``last_change``).
        ``CloverError`` when refused (the user changed those files since: ``force``)."""
        op = p.Undo(turns=turns, what=what, force=force, last_change=last_change)
        answer = await self._ask(op)
        return next((e for e in answer if isinstance(e, p.UndoDone)), None)

    async def set_approval_mode(self, mode: p.ApprovalMode) -> None:
        """Switch the approval mode for the rest of the session (``ConfigError`` when an
        administrator's ``max_approval`` refuses it)."""
        if mode not in p.APPROVAL_MODES:
            raise UsageError(
                f"{mode!r} is not an approval mode; use one of {', '.join(p.APPROVAL_MODES)}."
            )
        await self._ask(p.SetApprovalMode(mode=mode), refused=ConfigError)

    async def close(self) -> None:
        """Stop any running turn and end the session (its transcript stays saved)."""
        core, self._core = self._core, None
        if core is None:
            return
        await core.close()
        if self._turn is not None:
            with contextlib.suppress(BaseException):
                await asyncio.gather(self._turn, return_exceptions=True)

    async def _ask(self, op: p.Op, refused: type[CloverError] = CloverError) -> list[p.Event]:
        """Send ``op`` between turns; the events it caused (an error event raises)."""
        session = self._session()
        if self._running():
            raise UsageError("a turn is running; wait for it to end or interrupt() it first.")
        await session.submit(op)
        answer: list[p.Event] = []
        for event in self._drain():
            if event.op_id != op.id:
                continue
            if isinstance(event, p.ErrorEvent):
                raise refused(event.message)
            answer.append(event)
        return answer

    def _drain(self) -> list[p.Event]:
        found: list[p.Event] = []
        while not self._queue.empty():
            event = self._queue.get_nowait()
            if not isinstance(event, _TurnEnd):
                found.append(event)
        return found

    def _running(self) -> bool:
        return self._turn is not None and not self._turn.done()

    def _session(self) -> CoreSession:
        if self._core is None:
            raise UsageError("the session is not open; use it in `async with Session(...)`.")
        return self._core
