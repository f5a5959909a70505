"""One decoding thread for every response a local engine serves at the same time.

Parallel subagents, the sessions an editor opens and concurrent ``serve``
requests all stream from the same loaded model. Each response is a ``Job``
handed to the ``BatchScheduler``; its one thread owns the model and a
``BatchDecoder`` (``diffusion/batch.py``), so up to ``max_batch`` responses
denoise their blocks in the same forwards and the rest wait for a place. A
job's events reach its consumer through its ``Channel``; a consumer that goes
away cancels its job, which leaves the batch at its next step.

A forward that fails fails every job in the batch (their state is gone); the
thread then starts afresh for the jobs that come next.
"""

from __future__ import annotations

import contextlib
import queue
import threading
from collections.abc import AsyncGenerator, Callable
from typing import Protocol

from clover_code.engine.events import EngineEvent
from clover_code.engine.local.diffusion.batch import BatchDecoder
from clover_code.engine.local.diffusion.options import Block, DecodeOptions, Step
from clover_code.engine.local.diffusion.sequence import Sequence
from clover_code.engine.local.worker import Channel

__all__ = ["BatchScheduler", "Job"]


class Job(Protocol):
    """One response decoded by the scheduler."""

    channel: Channel

    def prepare(self) -> tuple[list[int], DecodeOptions]:
        """The prompt's ids and the decoding options (run in the decoding thread)."""
        ...

    def handle(self, item: Step | Block) -> None:
        """A denoising step or a finished block of this response."""
        ...

    def stopped(self) -> bool:
        """Whether the response wants no more output (a stop string, or its consumer left)."""
        ...

    def finish(self, sequence: Sequence) -> None:
        """The response is over: its closing events, then ``channel.close()``."""
        ...


class BatchScheduler:
    """Runs jobs on one thread, batching up to ``max_batch`` of them per forward."""

    def __init__(
        self, make_decoder: Callable[[], BatchDecoder], on_failure: Callable[[], None]
    ) -> None:
        self._make_decoder = make_decoder
        self._on_failure = on_failure
        self._inbox: queue.Queue[Job | None] = queue.Queue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._running = 0
        """Jobs submitted and not yet over."""

    @property
    def running(self) -> int:
        """Responses being decoded or waiting for a place."""
        return self._running

    async def stream(self, job: Job) -> AsyncGenerator[EngineEvent, None]:
        """The events of ``job``, decoded with whatever else is running."""
        self._start()
        with self._lock:
            self._running += 1
        self._inbox.put(job)
        async with contextlib.aclosing(job.channel.events()) as events:
            async for event in events:
                yield event

    def close(self) -> threading.Thread | None:
        """Stop the thread once the jobs it has are over; returns it, for a caller that
        must wait for it (before the model it runs is dropped)."""
        thread, self._thread = self._thread, None
        if thread is not None:
            self._inbox.put(None)
        return thread

    def _start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="clover-batch", daemon=True)
            self._thread.start()

    def _run(self) -> None:
        decoder = self._make_decoder()
        active: dict[Job, Sequence] = {}
        closing = False
        while not (closing and not active and not decoder.busy):
            try:
                incoming = [self._inbox.get(block=not decoder.busy and not closing)]
            except queue.Empty:
                incoming = []
            while True:
                try:
                    incoming.append(self._inbox.get_nowait())
                except queue.Empty:
                    break
            for job in incoming:
                if job is None:
                    closing = True
                    continue
                self._admit(decoder, job, active)
            if decoder.busy:
                try:
                    decoder.step()
                except BaseException as exc:  # every job of the batch gets it
                    for job in active:
                        self._done(job, exc)
                    active.clear()
                    decoder.close()
                    self._on_failure()
                    decoder = self._make_decoder()
                    continue
            for job, sequence in list(active.items()):
                if sequence.state == "done":
                    del active[job]
                    self._done(job, None, sequence)
        decoder.close()
        while True:  # submitted after the close: nobody will decode them
            try:
                late = self._inbox.get_nowait()
            except queue.Empty:
                break
            if late is not None:
                self._done(late, RuntimeError("the engine was closed"))

    def _admit(self, decoder: BatchDecoder, job: Job, active: dict[Job, Sequence]) -> None:
        try:
            prompt, options = job.prepare()
            sequence = decoder.add(prompt, options, sink=job.handle, cancelled=job.stopped)
        except BaseException as exc:  # this job's own trouble (bad prompt, too long)
            self._done(job, exc)
            return
        active[job] = sequence

    def _done(
        self, job: Job, error: BaseException | None, sequence: Sequence | None = None
    ) -> None:
        try:
            if error is None and sequence is not None:
                job.finish(sequence)
        except BaseException as exc:  # a failure while assembling the tail of the output
            error = exc
        finally:
            job.channel.close(error)
            with self._lock:
                self._running -= 1
