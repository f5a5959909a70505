"""Read-only tool calls that start while the response that makes them is still coming.

A block-diffusion model commits a tool call's last block long before the
response ends, and a reading call (``read_file``, ``grep``, a web fetch, an MCP
tool the user vouched for as read-only) changes nothing: it can run while the
rest is still being written. ``EarlyCalls`` starts such a call as soon as its
arguments are complete in the stream and holds what it reports:

* only the leading run of a response's calls starts early, each only when it
  is a reading kind and the approval mode and rules would run it without
  asking; the first call that is not (an edit, a command, one that would ask)
  ends the run, and it and every later call wait for the whole response, so a
  read never overtakes an edit made before it;
* the calls' PreToolUse hooks and approvals run one after another, in the
  order of the calls (``Slot``); a call whose hook changed its arguments so
  that it would now ask waits for the end of the response before asking;
* every event a call emits is held until the response ends (``release``):
  then they go out in the order they were made, and the results reach the
  model in the order of the calls, as for calls run afterwards;
* when the response fails or is interrupted (``discard``, or leaving the
  ``async with``), the calls still running are cancelled and none is
  reported: no ``ToolCallStarted``/``ToolCallFinished``, no tool message in
  the transcript (the loop records the failed response without its calls).
  Their PreToolUse hooks may have run by then (``HookRan`` says so).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from types import TracebackType
from typing import Any, Generic, Protocol, TypeVar

from clover_code import protocol as p

__all__ = ["EarlyCalls", "Slot"]


class _Call(Protocol):
    @property
    def id(self) -> str: ...


CallT = TypeVar("CallT", bound=_Call)


class Slot:
    """One early call's place in line: its turn to be checked, and where its events go."""

    def __init__(self, before: Slot | None, released: asyncio.Event, held: list[p.Event]) -> None:
        self._before = before
        self._released = released
        self._held = held
        self._emit: p.Emit | None = None
        self.admitted = asyncio.Event()
        """Set once the call's hooks and approval are done (it may now run)."""

    def bind(self, emit: p.Emit) -> None:
        """Where the events go once the response has ended."""
        self._emit = emit

    def emit(self, event: p.Event) -> None:
        """Hold ``event`` until the response ends; pass it on after that."""
        if self._released.is_set() and self._emit is not None:
            self._emit(event)
        else:
            self._held.append(event)

    async def my_turn(self) -> None:
        """Wait until the calls before this one were checked (hooks and approvals in order)."""
        if self._before is not None:
            await self._before.admitted.wait()

    async def response_ended(self) -> None:
        """Wait until the whole response has arrived (before asking the user anything)."""
        await self._released.wait()

    def admit(self) -> None:
        """The call's checks are done: the next call may be checked."""
        self.admitted.set()


class EarlyCalls(Generic[CallT]):
    """The read-only calls of one response that were started before it ended.

    ``offer`` is given each call as its arguments complete; ``eligible`` says
    whether it may start now and ``start`` makes the coroutine that runs it
    with its ``Slot``. Use as ``async with``: leaving it cancels what is still
    running (an interruption, a time limit)."""

    def __init__(
        self,
        *,
        enabled: bool,
        eligible: Callable[[CallT], bool],
        start: Callable[[CallT, Slot], Coroutine[Any, Any, None]],
        emit: p.Emit,
    ) -> None:
        self._open = enabled
        self._eligible = eligible
        self._start = start
        self._emit = emit
        self._released = asyncio.Event()
        self._held: list[p.Event] = []
        self._tasks: dict[str, asyncio.Task[None]] = {}
        self._last: Slot | None = None

    async def __aenter__(self) -> EarlyCalls[CallT]:
        return self

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        await self._cancel()

    def offer(self, call: CallT) -> None:
        """Start ``call`` now if it belongs to the leading run of calls that may."""
        if not self._open:
            return
        if not self._eligible(call):
            self._open = False  # it, and every call after it, waits for the whole response
            return
        slot = Slot(self._last, self._released, self._held)
        slot.bind(self._emit)
        self._last = slot
        self._tasks[call.id] = asyncio.create_task(self._run(call, slot))

    async def _run(self, call: CallT, slot: Slot) -> None:
        try:
            await self._start(call, slot)
        finally:
            slot.admit()  # a call that ended before its checks did must not block the next

    def started(self, call_id: str) -> bool:
        """Whether the call with ``call_id`` was started early."""
        return call_id in self._tasks

    @property
    def count(self) -> int:
        """How many calls were started early."""
        return len(self._tasks)

    def release(self) -> None:
        """The response ended well: send the held events, in order, and let the calls report."""
        self._open = False
        held, self._held[:] = list(self._held), []
        self._released.set()
        for event in held:
            self._emit(event)

    async def finish(self, call_id: str) -> None:
        """Wait for the early call ``call_id`` to end (after ``release``)."""
        await self._tasks[call_id]

    async def checked(self) -> None:
        """Wait until every early call's hooks and approval are done."""
        if self._last is not None:
            await self._last.admitted.wait()

    async def discard(self) -> None:
        """The response failed: cancel the calls and forget everything they reported."""
        await self._cancel()
        self._tasks.clear()

    async def _cancel(self) -> None:
        self._open = False
        if not self._released.is_set():
            self._held.clear()
        tasks = list(self._tasks.values())
        for task in tasks:
            task.cancel()
        if tasks:
            # Shielded from a second cancellation so none is left running unawaited.
            await asyncio.shield(asyncio.gather(*tasks, return_exceptions=True))
