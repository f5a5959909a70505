"""Running synchronous (torch) work in a thread: a generation streaming its events, a load.

The local engines decode in a worker thread so the event loop (the TUI, the
server) stays responsive. ``stream_from_thread`` runs ``produce(emit,
cancelled)`` in a thread and yields what it emits; closing the consuming
generator sets ``cancelled`` so the producer stops at its next step.
``in_daemon_thread`` runs one long call (loading a checkpoint) where a user
who quits meanwhile is not kept waiting for it: the thread dies with the
process, unlike asyncio's executor threads, which exit waits for.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import AsyncGenerator, Callable
from typing import TypeVar

from clover_code.engine.events import EngineEvent

__all__ = ["Producer", "in_daemon_thread", "stream_from_thread"]

Producer = Callable[[Callable[[list[EngineEvent]], None], Callable[[], bool]], None]

_DONE = object()
_T = TypeVar("_T")


async def in_daemon_thread(call: Callable[[], _T], name: str = "clover-load") -> _T:
    """The result of ``call()`` run in a daemon thread (its exception re-raised here)."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[_T] = loop.create_future()

    def settle(result: _T | None, error: BaseException | None) -> None:
        if future.done():
            return  # the awaiting task was cancelled meanwhile
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(result)  # type: ignore[arg-type]

    def run() -> None:
        result: _T | None = None
        error: BaseException | None = None
        try:
            result = call()
        except BaseException as exc:  # handed to the awaiting task
            error = exc
        with contextlib.suppress(RuntimeError):  # the loop is gone: nobody waits any more
            loop.call_soon_threadsafe(settle, result, error)

    threading.Thread(target=run, name=name, daemon=True).start()
    return await future


async def stream_from_thread(produce: Producer) -> AsyncGenerator[EngineEvent, None]:
    """Yield the events ``produce`` emits from a worker thread."""
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue[object] = asyncio.Queue()
    stop = threading.Event()

    def emit(events: list[EngineEvent]) -> None:
        loop.call_soon_threadsafe(queue.put_nowait, events)

    def run() -> None:
        try:
            produce(emit, stop.is_set)
        except BaseException as exc:  # handed to the consumer, which re-raises it
            loop.call_soon_threadsafe(queue.put_nowait, exc)
        finally:
            loop.call_soon_threadsafe(queue.put_nowait, _DONE)

    worker = threading.Thread(target=run, name="clover-decode", daemon=True)
    worker.start()
    try:
        while True:
            item = await queue.get()
            if item is _DONE:
                return
            if isinstance(item, BaseException):
                raise item
            assert isinstance(item, list)
            for event in item:
                yield event
    finally:
        stop.set()
        # Wait for the step in flight so the next request never shares the model with it.
        await asyncio.shield(asyncio.to_thread(worker.join))
