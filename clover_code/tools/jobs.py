"""Background jobs: commands the shell tool started with ``background: true``.

A session has one ``JobTable``. Each job runs in the session's sandbox
(``Sandbox.start_job``: its own process group, the network later commands
share) until it ends or is stopped; at most ``max_jobs`` run at once. Its
output goes two ways as it arrives: into the text not yet read (kept head +
tail within ``output_limit``, so memory stays bounded however much it prints)
and, in full up to ``LOG_LIMIT``, into a log file the ``read_output`` tool
reads (``job-ID``), as long tool output is kept today. ``job_output`` takes
the unread text; ``job_stop`` and ``stop_all`` stop jobs (the session stops
every one when it ends or is interrupted, and says which).

Whoever opened the table hears each change (``on_change``: every job kept,
as protocol ``JobInfo``); the app shows them, ACP and headless report them.
"""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import logging
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO

from clover_code import protocol as p
from clover_code.errors import ToolError
from clover_code.fs.private import open_private, private_dir
from clover_code.tools.sandbox.base import JobEnd, JobHandle, Sandbox
from clover_code.tools.sandbox.output import HeadTailBuffer
from clover_code.tools.spill import OutputSpill

__all__ = ["LOG_LIMIT", "Job", "JobTable", "job_key", "stopped_notice"]

log = logging.getLogger(__name__)

LOG_LIMIT = 16 * 1024 * 1024
"""Bytes of a job's output saved to its log file; past that only the unread text is kept."""

KEPT_ENDED = 20
"""Ended jobs the table remembers (for ``job_output``), besides the running ones."""

STOP_TIMEOUT = 10.0
"""Seconds ``stop`` waits for a job's end to be reported once the sandbox stopped it."""


class Job:
    """One background command: its output, and how it stands."""

    def __init__(self, job_id: str, command: str, log_path: Path | None) -> None:
        self.id = job_id
        self.command = command
        self.started = time.time()
        self.ended: float | None = None
        self.state: p.JobState = "running"
        self.exit_code: int | None = None
        self.reason = ""
        """Why it stopped or was lost (``interrupted``, ``the session ended``...)."""
        self.handle: JobHandle | None = None
        self.changed = asyncio.Event()
        """Set when output arrives or the job ends; cleared by whoever waits on it."""
        self._unread: HeadTailBuffer | None = None
        self._limit = 0
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self.log_path = log_path
        self._log: IO[bytes] | None = None
        self._logged = 0
        self.seen_output = False
        self._stop_reason: str | None = None
        self.watcher: asyncio.Task[None] | None = None

    @property
    def running(self) -> bool:
        """Whether it has not ended yet."""
        return self.state == "running"

    def info(self) -> p.JobInfo:
        """How the job stands, for the front ends."""
        return p.JobInfo(
            id=self.id,
            command=self.command,
            state=self.state,
            exit_code=self.exit_code,
            started=self.started,
            ended=self.ended,
            reason=self.reason,
        )

    def describe(self) -> str:
        """One line for the model and the user: id, state and command."""
        return f"job {self.id} ({self.status()}): {self.command}"

    def status(self) -> str:
        """``running``, ``exited with code 0``, ``stopped (interrupted)``..."""
        if self.state == "running":
            return "running"
        if self.state == "exited":
            return f"exited with code {self.exit_code}"
        return f"{self.state} ({self.reason})" if self.reason else self.state

    def open_output(self, limit: int) -> None:
        """Start keeping output: ``limit`` characters of unread text, and the log file."""
        self._limit = limit
        self._unread = HeadTailBuffer(limit)
        if self.log_path is None:
            return
        try:
            private_dir(self.log_path.parent)
            self._log = open_private(self.log_path, append=False)
            self._log.truncate(0)
        except OSError as exc:
            log.warning("cannot save the output of job %s: %s", self.id, exc)
            self.log_path = None

    def feed(self, data: bytes) -> None:
        """Take the next piece of output (on the event loop's thread)."""
        text = self._decoder.decode(data)
        self._write(text, len(data))
        self._save(data)

    def _write(self, text: str, size: int) -> None:
        if self._unread is None:
            return
        self._unread.write(text, size)
        if text:
            self.seen_output = True
            self.changed.set()

    def _save(self, data: bytes) -> None:
        if self._log is None or not data:
            return
        room = LOG_LIMIT - self._logged
        try:
            if len(data) <= room:
                self._log.write(data)
                self._logged += len(data)
                return
            self._log.write(data[:room])
            self._log.write(b"\n[... the log stops here: the job printed more than it keeps ...]\n")
        except OSError as exc:
            log.warning("cannot save the output of job %s: %s", self.id, exc)
        self._close_log()

    def _close_log(self) -> None:
        if self._log is not None:
            with contextlib.suppress(OSError):
                self._log.close()
            self._log = None

    def take(self) -> tuple[str, bool]:
        """The output not read yet (head + tail when it was long), and whether it was cut."""
        if self._unread is None:
            return "", False
        text, cut = self._unread.text(), self._unread.truncated
        self._unread = HeadTailBuffer(self._limit)
        return text, cut

    def end(self, how: JobEnd) -> None:
        """Record the end the sandbox reported."""
        self._write(self._decoder.decode(b"", True), 0)
        self._close_log()
        self.ended = time.time()
        if self._stop_reason is not None:
            self.state, self.reason = "stopped", self._stop_reason
        elif how.lost is not None:
            self.state, self.reason = "lost", how.lost
        elif how.exit_code is None:
            self.state, self.reason = "stopped", "killed"
        else:
            self.state, self.exit_code = "exited", how.exit_code
        self.changed.set()

    def stopping(self, reason: str) -> None:
        """Mark the end about to come as a stop, for ``reason``."""
        if self._stop_reason is None:
            self._stop_reason = reason


class JobTable:
    """The background jobs of one session (see the module)."""

    def __init__(
        self,
        sandbox: Sandbox,
        *,
        max_jobs: int = 4,
        output_limit: int = 30_000,
        spill: OutputSpill | None = None,
        on_change: Callable[[list[p.JobInfo]], None] | None = None,
    ) -> None:
        self.sandbox = sandbox
        self.max_jobs = max_jobs
        self.output_limit = output_limit
        self._spill = spill
        self._on_change = on_change
        self._jobs: dict[str, Job] = {}
        self._next = 1
        self._closed = False

    def running(self) -> list[Job]:
        """The jobs still running, oldest first."""
        return [job for job in self._jobs.values() if job.running]

    def jobs(self) -> list[Job]:
        """Every job the table keeps, oldest first."""
        return list(self._jobs.values())

    def get(self, job_id: str) -> Job:
        """The job ``job_id`` of this session; ``ToolError`` naming the others if none."""
        job = self._jobs.get(job_key(job_id))
        if job is None:
            known = ", ".join(j.describe() for j in self._jobs.values()) or "none"
            raise ToolError(
                f"there is no background job '{job_id}' in this session (jobs: {known})."
            )
        return job

    async def start(self, command: str) -> Job:
        """Start ``command`` as a new job; ``ToolError`` when ``max_jobs`` already run."""
        if self._closed:
            raise ToolError("the session is closing; no new background job can start.")
        if self.max_jobs == 0:
            raise ToolError(
                "background jobs are off (max_jobs = 0); run the command without "
                "background=true, or raise max_jobs in the config."
            )
        running = self.running()
        if len(running) >= self.max_jobs:
            listed = "; ".join(job.describe() for job in running)
            raise ToolError(
                f"{len(running)} background jobs already run, the most this session allows "
                f"(max_jobs = {self.max_jobs}); stop one with job_stop first ({listed})."
            )
        job_id = str(self._next)
        name = f"job-{job_id}"
        log_path = self._spill.directory / f"{name}.log" if self._spill is not None else None
        job = Job(job_id, command, log_path)
        job.open_output(self.output_limit)
        try:
            job.handle = await self.sandbox.start_job(command, job.feed)
        except BaseException:
            job.end(JobEnd(None, lost="it did not start"))
            raise
        self._next += 1  # a start that failed leaves no gap in the ids
        if self._spill is not None and job.log_path is not None:
            self._spill.saved[name] = job.log_path
        self._jobs[job_id] = job
        self._forget_old()
        job.watcher = asyncio.ensure_future(self._watch(job, job.handle))
        self._changed()
        if self._closed:  # the session began closing while the job started
            await self.stop(job, "the session ended")
        return job

    async def _watch(self, job: Job, handle: JobHandle) -> None:
        try:
            how = await handle.wait()
        except Exception as exc:  # a sandbox fault must not leave the job "running" forever
            log.debug("waiting for job %s failed", job.id, exc_info=True)
            how = JobEnd(None, lost=f"the sandbox failed ({type(exc).__name__})")
        job.end(how)
        self._changed()

    def _forget_old(self) -> None:
        ended = [job for job in self._jobs.values() if not job.running]
        for job in ended[: max(0, len(ended) - KEPT_ENDED)]:
            del self._jobs[job.id]

    def _changed(self) -> None:
        if self._on_change is None:
            return
        try:
            self._on_change([job.info() for job in self._jobs.values()])
        except Exception:
            log.exception("reporting the background jobs failed")

    async def refresh(self, job: Job) -> None:
        """Bring ``job``'s output up to date (the editor's terminal is polled)."""
        if job.handle is not None and job.running:
            await job.handle.refresh()

    async def wait(self, job: Job, seconds: float) -> None:
        """Wait until ``job`` ends or ``seconds`` pass."""
        if job.watcher is None or not job.running or seconds <= 0:
            return
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(job.watcher), seconds)

    async def settle(self, job: Job, longest: float, quiet: float) -> None:
        """Wait for a new job's first output: until it ends, until its output has been
        quiet for ``quiet`` seconds after some came, or ``longest`` seconds."""
        deadline = asyncio.get_running_loop().time() + longest
        while job.running:
            left = deadline - asyncio.get_running_loop().time()
            if left <= 0:
                return
            job.changed.clear()
            await self.refresh(job)
            wait = min(left, quiet) if job.seen_output else min(left, 0.25)
            try:
                await asyncio.wait_for(job.changed.wait(), wait)
            except TimeoutError:
                if job.seen_output:
                    return

    async def stop(self, job: Job, reason: str) -> bool:
        """Stop ``job`` (its whole process group) for ``reason``; False when it had ended."""
        if not job.running or job.handle is None:
            return False
        job.stopping(reason)
        await job.handle.stop()
        if job.watcher is not None:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.shield(job.watcher), STOP_TIMEOUT)
        return True

    async def stop_all(self, reason: str, *, closing: bool = False) -> list[Job]:
        """Stop every running job for ``reason``; the jobs stopped. ``closing``: no job
        starts after this."""
        self._closed = self._closed or closing
        running = self.running()
        done = await asyncio.gather(*(self.stop(job, reason) for job in running))
        return [job for job, stopped in zip(running, done, strict=True) if stopped]


def job_key(given: str) -> str:
    """The table's key for a job id as the model may write it: ``1``, ``job 1``, ``job-1``."""
    text = given.strip().lower()
    return text.removeprefix("job").strip(" -_#")


def stopped_notice(jobs: list[Job], why: str) -> str:
    """The sentence telling the user which jobs were stopped and why."""
    names = "; ".join(f"job {job.id}: {job.command}" for job in jobs)
    what = "background job" if len(jobs) == 1 else f"{len(jobs)} background jobs"
    return f"stopped {what} as {why} ({names})."
