"""Running synchronous (torch) work in a thread: a generation streaming its events, a load.

The local engines decode in a worker thread so the event loop (the TUI, the
server) stays responsive. A ``Channel`` carries one response's events from
the thread that decodes it to the task that consumes them; closing the
consuming generator marks the channel cancelled so the decoder drops that
response at its next step. ``stream_from_thread`` runs ``produce(emit,
cancelled)`` in a thread of its own over a channel. ``in_daemon_thread``
runs one long call (loading a checkpoint) where a user who quits meanwhile
is not kept waiting for it: the thread dies with the process, unlike
asyncio's executor threads, which exit waits for.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import AsyncGenerator, Callable
from typing import TypeVar

from clover_code.engine.events import EngineEvent

__all__ = ["Channel", "Producer", "in_daemon_thread", "stream_from_thread"]

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


class Channel:
    """One response's events, from a decoding thread to the task that streams them.

    Made on the event loop; ``emit``, ``close`` and ``cancelled`` may be called
    from any thread.
    """

    def __init__(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._queue: asyncio.Queue[object] = asyncio.Queue()
        self._stop = threading.Event()
        self._closed = False

    def emit(self, events: list[EngineEvent]) -> None:
        """Hand ``events`` to the consumer (dropped once it has gone)."""
        if not self._stop.is_set():
            self._put(events)

    def close(self, error: BaseException | None = None) -> None:
        """No more events; ``error`` is raised in the consumer (when it is still there)."""
        if self._closed:
            return
        self._closed = True
        if error is not None:
            self._put(error)
        self._put(_DONE)

    def cancelled(self) -> bool:
        """Whether the consumer has gone (closed its stream)."""
        return self._stop.is_set()

    async def events(self) -> AsyncGenerator[EngineEvent, None]:
        """The events, until ``close``; closing this generator cancels the channel."""
        try:
            while True:
                item = await self._queue.get()
                if item is _DONE:
                    return
                if isinstance(item, BaseException):
                    raise item
                assert isinstance(item, list)
                for event in item:
                    yield event
        finally:
            self._stop.set()

    def _put(self, item: object) -> None:
        with contextlib.suppress(RuntimeError):  # the loop is gone: nobody reads any more
            self._loop.call_soon_threadsafe(self._queue.put_nowait, item)


async def stream_from_thread(produce: Producer) -> AsyncGenerator[EngineEvent, None]:
    """Yield the events ``produce`` emits from a worker thread of its own."""
    channel = Channel()

    def run() -> None:
        try:
            produce(channel.emit, channel.cancelled)
        except BaseException as exc:  # handed to the consumer, which re-raises it
            channel.close(exc)
        finally:
            channel.close()

    worker = threading.Thread(target=run, name="clover-decode", daemon=True)
    worker.start()
    try:
        async with contextlib.aclosing(channel.events()) as events:
            async for event in events:
                yield event
    finally:
        # Wait for the step in flight so the next request never shares the model with it.
        await asyncio.shield(asyncio.to_thread(worker.join))
