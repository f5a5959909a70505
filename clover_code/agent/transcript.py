"""Session transcripts: append-only JSONL, one record per line, fsync'd.

Line 1 is a ``meta`` record (id, cwd, model, created). After it come
``message`` records (the chat history the model sees, in order) and
``event`` records (the protocol events front ends saw, for replay), and
``history`` records where the history was rewritten (compaction, /clear):
loading replaces the messages read so far with the record's. A crash
can only tear the last line; loading drops a torn last line and keeps the
rest of the session.
"""

from __future__ import annotations

import json
import os
import secrets
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from clover_code.errors import UsageError


def new_session_id() -> str:
    """A sortable, unique id: UTC timestamp plus random suffix."""
    return time.strftime("%Y%m%d-%H%M%S", time.gmtime()) + "-" + secrets.token_hex(3)


@dataclass(slots=True)
class LoadedSession:
    """What ``load`` recovers from a transcript file."""

    meta: dict[str, Any]
    messages: list[dict[str, Any]] = field(default_factory=list)
    events: list[dict[str, Any]] = field(default_factory=list)
    dropped_torn_line: bool = False


class Transcript:
    """An open transcript file that records are appended to."""

    def __init__(self, path: Path, fh: IO[bytes]) -> None:
        self.path = path
        self._fh = fh

    @classmethod
    def create(cls, directory: Path, meta: dict[str, Any]) -> Transcript:
        """Start a new transcript in ``directory`` with the given meta record."""
        directory.mkdir(parents=True, exist_ok=True)
        path = directory / f"{meta['id']}.jsonl"
        transcript = cls(path, path.open("ab"))
        transcript.append({"kind": "meta", **meta})
        return transcript

    @classmethod
    def reopen(cls, path: Path) -> Transcript:
        """Continue appending to an existing transcript, first cutting a torn tail."""
        _truncate_torn_tail(path)
        return cls(path, path.open("ab"))

    def append(self, record: dict[str, Any]) -> None:
        """Write one record and make it durable before returning."""
        line = json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n"
        self._fh.write(line.encode("utf-8"))
        self._fh.flush()
        os.fsync(self._fh.fileno())

    def message(self, message: dict[str, Any]) -> None:
        """Record a chat message."""
        self.append({"kind": "message", "message": message})

    def history(self, messages: list[dict[str, Any]]) -> None:
        """Record that the chat history was rewritten (compaction, /clear)."""
        self.append({"kind": "history", "messages": messages})

    def event(self, event: dict[str, Any]) -> None:
        """Record a protocol event (already dumped to a dict)."""
        self.append({"kind": "event", "event": event})

    def close(self) -> None:
        """Close the file; every record is already on disk."""
        self._fh.close()


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
    return session


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
