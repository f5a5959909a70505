"""Session transcripts: append-only JSONL, one record per line, fsync'd.

Line 1 is a ``meta`` record (id, cwd, model, created). After it come
``message`` records (the chat history the model sees, in order) and
``event`` records (the protocol events front ends saw, for replay), and
``history`` records where the history was rewritten (compaction, /clear):
loading replaces the messages read so far with the record's. A crash
can only tear the last line; loading drops a torn last line and keeps the
rest of the session.

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
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from clover_code.agent.session_lock import SessionLock
from clover_code.engine.messages import Message, tool_calls
from clover_code.errors import CloverError, UsageError
from clover_code.fs.private import open_private, private_dir
from clover_code.redact import redact_tree

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


@dataclass(slots=True)
class LoadedSession:
    """What ``load`` recovers from a transcript file."""

    meta: dict[str, Any]
    messages: list[Message] = field(default_factory=list)
    events: list[dict[str, Any]] = field(default_factory=list)
    dropped_torn_line: bool = False
    interrupted: int = 0
    """Tool calls that had no result (the process died during them), now answered."""


class Transcript:
    """An open transcript file that records are appended to."""

    def __init__(self, path: Path, fh: IO[bytes], lock: SessionLock | None = None) -> None:
        self.path = path
        self._fh = fh
        self._lock = lock
        self.failure: TranscriptError | None = None
        """The write failure that stopped recording, if one happened."""
        self.on_failure: Callable[[TranscriptError], None] | None = None
        """Told once, when a write fails after the transcript was opened."""
        self._resumable = True
        """Whether the file holds a session to resume (not before ``create``'s header)."""

    @classmethod
    def create(cls, directory: Path, meta: dict[str, Any]) -> Transcript:
        """Start a new transcript in ``directory`` with the given meta record.

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
            transcript._write({"kind": "meta", **meta})
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
        """Continue appending to an existing transcript, first cutting a torn tail.

        Raises ``UsageError`` when another process has the session open."""
        try:
            lock = SessionLock.acquire(path)
        except OSError as exc:
            raise _write_failure(path, exc, resumable=True) from None
        try:
            _truncate_torn_tail(path)
            fh = open_private(path)
        except OSError as exc:
            lock.release()
            raise _write_failure(path, exc, resumable=True) from None
        return cls(path, fh, lock)

    def append(self, record: dict[str, Any]) -> None:
        """Write one record and make it durable before returning.

        After a failed write nothing more is recorded; the failure goes to
        ``on_failure`` (raised when there is none)."""
        if self.failure is not None:
            return
        try:
            self._write(record)
        except TranscriptError as exc:
            self.failure = exc
            if self.on_failure is None:
                raise
            self.on_failure(exc)

    def _write(self, record: dict[str, Any]) -> None:
        record = redact_tree(record)  # no secret is kept on disk either
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
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
        except OSError as exc:
            # Cut a partly written record away: the file ends on a whole line.
            with contextlib.suppress(OSError):
                os.ftruncate(fd, start)
            raise _write_failure(self.path, exc, resumable=self._resumable) from None

    def message(self, message: Message) -> None:
        """Record a chat message."""
        self.append({"kind": "message", "message": message})

    def history(self, messages: list[Message]) -> None:
        """Record that the chat history was rewritten (compaction, /clear)."""
        self.append({"kind": "history", "messages": messages})

    def event(self, event: dict[str, Any]) -> None:
        """Record a protocol event (already dumped to a dict)."""
        self.append({"kind": "event", "event": event})

    def close(self) -> None:
        """Close the file (every record is already on disk) and unlock the session."""
        with contextlib.suppress(OSError):
            self._fh.close()
        if self._lock is not None:
            self._lock.release()


def _truncate_torn_tail(path: Path) -> None:
    """Cut an unterminated last line so new records start on a fresh line."""
    data = path.read_bytes()
    if data and not data.endswith(b"\n"):
        cut = data.rfind(b"\n") + 1
        with path.open("r+b") as fh:
            fh.truncate(cut)
            fh.flush()
            os.fsync(fh.fileno())


def load(path: Path) -> LoadedSession:
    """Read a transcript; a torn or corrupt last line is dropped, never the session."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise UsageError(f"session file {path} does not exist.") from None
    lines = raw.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    session: LoadedSession | None = None
    dropped = False
    for number, line in enumerate(lines):
        try:
            record = json.loads(line)
        except ValueError:
            if number == len(lines) - 1:
                dropped = True
                break
            raise UsageError(
                f"session file {path} is damaged at line {number + 1}; "
                "start a new session or repair the file."
            ) from None
        kind = record.get("kind")
        if kind == "meta":
            session = LoadedSession(meta=record)
        elif session is None:
            break
        elif kind == "message":
            session.messages.append(record["message"])
        elif kind == "history":
            session.messages = list(record["messages"])
        elif kind == "event":
            session.events.append(record["event"])
    if session is None:
        raise UsageError(f"session file {path} has no session header; it cannot be resumed.")
    session.dropped_torn_line = dropped
    session.messages, session.interrupted = answer_interrupted(session.messages)
    return session


INTERRUPTED = (
    "[interrupted: clover-code stopped while this tool call ran, so it has no result; "
    "it may have run in part. Check its effects before running it again.]"
)
"""The result given on load to a tool call that never got one (the process was killed)."""


def answer_interrupted(messages: list[Message]) -> tuple[list[Message], int]:
    """``messages`` with a result after every assistant tool call that has none (a strict
    server rejects tool calls with no results after them), and how many were added."""
    out: list[Message] = []
    pending: list[str] = []
    added = 0

    def answer_pending() -> None:
        nonlocal added
        for call_id in pending:
            out.append({"role": "tool", "tool_call_id": call_id, "content": INTERRUPTED})
            added += 1
        pending.clear()

    for message in messages:
        answered = message.get("tool_call_id")
        if message.get("role") == "tool" and answered in pending:
            pending.remove(str(answered))
            out.append(message)
            continue
        answer_pending()
        out.append(message)
        if message.get("role") == "assistant":
            calls = tool_calls(message)
            pending[:] = [str(c["id"]) for c in calls if isinstance(c, dict) and c.get("id")]
    answer_pending()
    return out, added


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
