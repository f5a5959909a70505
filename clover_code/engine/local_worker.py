"""Running a synchronous (torch) generation in a thread and streaming its events.

The local engines decode in a worker thread so the event loop (the TUI, the
server) stays responsive. ``stream_from_thread`` runs ``produce(emit,
cancelled)`` in a thread and yields what it emits; closing the consuming
generator sets ``cancelled`` so the producer stops at its next step.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncGenerator, Callable

from clover_code.engine.events import EngineEvent

__all__ = ["Producer", "stream_from_thread"]

Producer = Callable[[Callable[[list[EngineEvent]], None], Callable[[], bool]], None]

_DONE = object()


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
