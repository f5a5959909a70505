"""One process at a time per session: a lock beside its transcript.

Two processes appending to one transcript interleave their messages into a
conversation no server accepts. Whoever opens a session (new, resumed or a
fork's copy) holds an exclusive ``flock`` on ``<id>.lock`` until it closes
it. The kernel lets go of a lock when its process dies, SIGKILL included, so
a lock left by a dead process is simply taken over; the lock file holds the
holder's pid, for the sentence a second opener gets.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from pathlib import Path
from typing import IO

from clover_code.errors import UsageError
from clover_code.fs.private import open_private

__all__ = ["SessionLock"]


class SessionLock:
    """The held lock of one session; ``release`` (or the process ending) lets it go."""

    def __init__(self, path: Path, fh: IO[bytes]) -> None:
        self.path = path
        self._fh = fh

    @classmethod
    def acquire(cls, transcript: Path) -> SessionLock:
        """Lock the session whose transcript is ``transcript``.

        Raises ``UsageError`` (one sentence naming ``--fork``) when another
        live process has it open; ``OSError`` when the lock cannot be made."""
        path = transcript.with_suffix(".lock")
        fh = open_private(path, append=False)
        try:
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            fh.close()
            holder = _holder(path)
            who = f" (process {holder})" if holder else ""
            raise UsageError(
                f"session {transcript.stem} is open in another clover-code{who}; close it "
                f"there, or continue in a copy with `clover-code --fork {transcript.stem}`."
            ) from None
        except BaseException:
            fh.close()
            raise
        with contextlib.suppress(OSError):  # a full disk costs only the pid in the message
            os.ftruncate(fh.fileno(), 0)
            os.pwrite(fh.fileno(), f"{os.getpid()}\n".encode(), 0)
        return cls(path, fh)

    def release(self) -> None:
        """Let go of the lock (the file stays: removing it would race a new opener)."""
        with contextlib.suppress(OSError):
            self._fh.close()


def _holder(path: Path) -> str:
    with contextlib.suppress(OSError, ValueError):
        text = path.read_text(encoding="ascii", errors="replace").strip()
        return str(int(text)) if text else ""
    return ""
