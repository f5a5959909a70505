"""Session transcripts: append-only JSONL, one record per line, group-committed.

Line 1 is a ``meta`` record (format, id, cwd, model). After it come the chat
history the model sees (``message`` and ``tool_result`` records, in order),
the protocol events front ends saw (``event`` records, for replay),
rewrites of the history (compaction, /clear, undo) and ``model`` records where
the session switched models (the last one is where a resumed session goes on). Each text is stored
once: a record refers to an earlier line that holds the same text
(``transcript_format.py``). A crash can only tear the last line; loading
(``transcript_load.py``) drops a torn last line and keeps the rest.

A failed write (disk full, quota, I/O error, no permission) never tears
the file: the file is cut back to where the record began, so what was
written before stays intact and loadable. Creating or reopening a
transcript raises ``TranscriptError``; a later failed write is reported
once to ``on_failure`` and the transcript records nothing more.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import secrets
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any

from clover_code.agent import transcript_crash
from clover_code.agent.session_lock import SessionLock
from clover_code.agent.transcript_format import FORMAT, Condenser
from clover_code.agent.transcript_load import (
    INTERRUPTED,
    LoadedSession,
    Reading,
    answer_interrupted,
    load,
    read_records,
)
from clover_code.engine.messages import Message
from clover_code.errors import CloverError, UsageError
from clover_code.fs.private import open_private, private_dir
from clover_code.redact import redact_tree

__all__ = [
    "FORMAT",
    "INTERRUPTED",
    "LoadedSession",
    "Transcript",
    "TranscriptError",
    "answer_interrupted",
    "find_session",
    "iter_sessions",
    "load",
    "new_session_id",
]

_WHY = {
    errno.ENOSPC: ("the disk is full", "free some space there"),
    errno.EDQUOT: ("the disk quota is used up", "free some space there"),
    errno.EIO: ("the disk reported an input/output error", "check the disk"),
    errno.EROFS: ("the file system is read-only", "make it writable"),
    errno.EACCES: ("clover-code may not write there", "fix the permissions"),
    errno.EPERM: ("clover-code may not write there", "fix the permissions"),
}


class TranscriptError(CloverError):
    """The session transcript could not be written; the session cannot go on."""


def _write_failure(path: Path, error: OSError, resumable: bool) -> TranscriptError:
    why, fix = _WHY.get(error.errno or 0, (error.strerror or str(error), "fix that"))
    if resumable:
        then = (
            f"{fix}, then resume with `clover-code --resume {path.stem}` "
            "(what was saved before is intact)"
        )
    else:
        then = f"{fix} or set sessions_dir (CLOVER_SESSIONS_DIR) to another place, then start again"
    return TranscriptError(
        f"could not save the session transcript {path}: {why} ({path.parent}); {then}."
    )


def new_session_id() -> str:
    """A sortable, unique id: UTC timestamp plus random suffix."""
    return time.strftime("%Y%m%d-%H%M%S", time.gmtime()) + "-" + secrets.token_hex(3)


class Transcript:
    """An open transcript file that records are appended to.

    Each record is written to the file as it comes (a killed process loses none);
    ``commit`` makes what was written durable with one fsync. The session commits
    once a step (before each model request), before a tool call that may change
    something, at the end of a turn, after a rewrite of the history and on close,
    so a crash of the machine loses at most the step in flight."""

    def __init__(
        self,
        path: Path,
        fh: IO[bytes],
        lock: SessionLock | None = None,
        *,
        reading: Reading | None = None,
    ) -> None:
        self.path = path
        self._fh = fh
        self._lock = lock
        self.loaded: LoadedSession | None = reading.session if reading else None
        """The session as it was when ``reopen`` read it (None for a new one)."""
        self._condenser = (
            Condenser(reading.recorded, reading.lines) if reading is not None else Condenser()
        )
        self._durable = reading.size if reading is not None else 0
        """The file's length at the last fsync."""
        self._unsynced = False
        self.failure: TranscriptError | None = None
        """The write failure that stopped recording, if one happened."""
        self.on_failure: Callable[[TranscriptError], None] | None = None
        """Told once, when a write fails after the transcript was opened."""
        self._resumable = True
        """Whether the file holds a session to resume (not before ``create``'s header)."""

    @classmethod
    def create(cls, directory: Path, meta: dict[str, Any]) -> Transcript:
        """Start a new transcript in ``directory`` with the given meta record (made
        durable before this returns).

        The directory and the file are private (0700, 0600) and the session
        is locked (``session_lock.py``) until ``close``."""
        path = directory / f"{meta['id']}.jsonl"
        try:
            private_dir(directory)
            lock = SessionLock.acquire(path)
        except OSError as exc:
            raise _write_failure(path, exc, resumable=False) from None
        try:
            fh = open_private(path)
        except OSError as exc:
            lock.release()
            raise _write_failure(path, exc, resumable=False) from None
        transcript = cls(path, fh, lock)
        transcript._resumable = False
        try:
            header = {k: v for k, v in meta.items() if k not in ("kind", "format")}
            record = {"kind": "meta", "format": FORMAT, **redact_tree(header)}
            transcript._write_all(transcript._condenser.other(record))
            transcript._sync()
        except TranscriptError:
            transcript.close()
            with contextlib.suppress(OSError):
                if path.stat().st_size == 0:
                    path.unlink()  # nothing in it to resume
                    lock.path.unlink()  # a new session id: nobody else waits on it
            raise
        transcript._resumable = True
        return transcript

    @classmethod
    def reopen(cls, path: Path) -> Transcript:
        """Continue appending to an existing transcript, first cutting a torn tail;
        ``loaded`` is the session it holds (read once, under the lock).

        Raises ``UsageError`` when another process has the session open or the file
        cannot be read as a session."""
        try:
            lock = SessionLock.acquire(path)
        except OSError as exc:
            raise _write_failure(path, exc, resumable=True) from None
        try:
            try:
                reading = read_records(path.read_bytes(), path)
            except FileNotFoundError:
                raise UsageError(f"session file {path} does not exist.") from None
            fh = open_private(path)
            if reading.session.dropped_torn_line:
                # New records start on a fresh line.
                os.ftruncate(fh.fileno(), reading.size)
                os.fsync(fh.fileno())
        except OSError as exc:
            lock.release()
            raise _write_failure(path, exc, resumable=True) from None
        except BaseException:
            lock.release()
            raise
        transcript = cls(path, fh, lock, reading=reading)
        if reading.format < FORMAT:
            try:  # what follows is of this format
                transcript.append({"kind": "format", "format": FORMAT})
            except TranscriptError:
                transcript.close()
                raise
        return transcript

    def append(self, record: dict[str, Any]) -> None:
        """Write one record (its secrets masked) as it is.

        After a failed write nothing more is recorded; the failure goes to
        ``on_failure`` (raised when there is none)."""
        self._guarded(lambda: self._write_all(self._condenser.other(redact_tree(record))))

    def message(self, message: Message) -> None:
        """Record a chat message."""
        self._guarded(lambda: self._write_all(self._condenser.message(redact_tree(message))))

    def history(self, messages: list[Message]) -> None:
        """Record that the chat history was rewritten (compaction, /clear, undo), durably."""
        self._guarded(lambda: self._write_all(self._condenser.rewrite(redact_tree(messages))))
        self.commit()

    def model_switch(self, name: str, model: str) -> None:
        """Record that the session switched to model ``name`` (server id ``model``)."""
        self.append({"kind": "model", "name": name, "model": model})

    def event(self, event: dict[str, Any]) -> None:
        """Record a protocol event (already dumped to a dict). A finished tool call's
        event is written with the tool message that answers it."""
        self._guarded(lambda: self._write_all(self._condenser.event(redact_tree(event))))

    def commit(self) -> None:
        """Make every record so far durable: one fsync, none when nothing is new.
        A failure stops recording, as a failed write does."""
        self._guarded(lambda: self._write_all(self._condenser.flush()))
        if self._unsynced:
            self._guarded(self._sync)

    def _guarded(self, action: Callable[[], None]) -> None:
        """Run a write or sync unless recording stopped; a failure stops it."""
        if self.failure is not None:
            return
        try:
            action()
        except TranscriptError as exc:
            self.failure = exc
            if self.on_failure is None:
                raise
            self.on_failure(exc)

    def _write_all(self, records: list[dict[str, Any]]) -> None:
        for record in records:
            self._write(record)

    def _write(self, record: dict[str, Any]) -> None:
        try:
            line = json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n"
            data = line.encode("utf-8")
        except UnicodeEncodeError:
            # A lone surrogate (from a server's JSON escapes) is not UTF-8; the
            # escaped form loads back to the same string.
            data = (json.dumps(record, separators=(",", ":")) + "\n").encode("ascii")
        fd = self._fh.fileno()
        start = os.lseek(fd, 0, os.SEEK_END)
        try:
            view = memoryview(data)
            plan = transcript_crash.PLAN
            if plan is not None:
                self._crash_point(plan, "write", record, fd)
                if plan.point("torn", _what(record)):
                    os.write(fd, view[: len(view) // 2])
                    plan.die(fd, self._durable)
            while view:
                view = view[os.write(fd, view) :]
            self._unsynced = True
        except OSError as exc:
            # Cut a partly written record away: the file ends on a whole line.
            with contextlib.suppress(OSError):
                os.ftruncate(fd, start)
            raise _write_failure(self.path, exc, resumable=self._resumable) from None

    def _sync(self) -> None:
        fd = self._fh.fileno()
        try:
            plan = transcript_crash.PLAN
            if plan is not None:
                self._crash_point(plan, "fsync", None, fd)
            os.fsync(fd)
            self._durable = os.lseek(fd, 0, os.SEEK_END)
            self._unsynced = False
        except OSError as exc:
            raise _write_failure(self.path, exc, resumable=self._resumable) from None

    def _crash_point(
        self, plan: transcript_crash.CrashPlan, where: str, record: dict[str, Any] | None, fd: int
    ) -> None:
        if plan.point(where, _what(record) if record is not None else ""):
            plan.die(fd, self._durable)

    def close(self) -> None:
        """Make what was written durable, close the file and unlock the session."""
        with contextlib.suppress(TranscriptError):
            self.commit()
        with contextlib.suppress(OSError):
            self._fh.close()
        if self._lock is not None:
            self._lock.release()


def _what(record: dict[str, Any]) -> str:
    """A record's kind, with the type of its event or the role of its message."""
    kind = str(record.get("kind"))
    detail = record.get("event", {}).get("type") or record.get("message", {}).get("role")
    return f"{kind}:{detail}" if detail else kind


def iter_sessions(directory: Path) -> Iterator[Path]:
    """Transcript files in ``directory``, newest first."""
    if not directory.is_dir():
        return iter(())
    return iter(sorted(directory.glob("*.jsonl"), key=lambda p: p.name, reverse=True))


def find_session(directory: Path, session_id: str | None, cwd: Path) -> Path:
    """The transcript to resume: by id (or unique prefix), else the newest for ``cwd``."""
    if session_id:
        matches = [p for p in iter_sessions(directory) if p.stem.startswith(session_id)]
        if len(matches) == 1:
            return matches[0]
        if not matches:
            raise UsageError(
                f"no session '{session_id}' in {directory}; "
                "run `clover-code --continue` to resume the latest one here."
            )
        raise UsageError(f"session id '{session_id}' is ambiguous; give more of it.")
    for path in iter_sessions(directory):
        try:
            with path.open("rb") as fh:
                first = json.loads(fh.readline())
        except ValueError:
            continue
        if first.get("cwd") == str(cwd):
            return path
    raise UsageError(f"no earlier session for {cwd} to continue; start one with --task.")
