"""For the crash tests only: the process kills itself at a chosen point of a transcript write.

A ``CrashPlan`` with ``at=N`` makes the process SIGKILL itself at the N-th
point (counted from 1, over every transcript it writes), where the points are,
in order: before each record is written, halfway through writing it (half its
bytes are in the file), and before each fsync. With ``power`` it first cuts
the transcript back to what its last fsync made durable: what a power cut may
leave. With ``log`` it appends one JSON line per point passed (its number,
where it is, and the record's kind), so a test can run once without a crash,
count the points and then kill a run at each.

A test process arms a plan with ``arm``; any process (``clover-code`` itself)
takes one from ``CLOVER_TEST_CRASH_AT=N[:power]`` and ``CLOVER_TEST_CRASH_LOG=FILE``.
Nothing here runs unless one of them is set.
"""

from __future__ import annotations

import json
import os
import signal
from dataclasses import dataclass
from pathlib import Path

CRASH_AT = "CLOVER_TEST_CRASH_AT"
CRASH_LOG = "CLOVER_TEST_CRASH_LOG"


@dataclass(slots=True)
class CrashPlan:
    """Where this process dies, and where it logs the points it passes."""

    at: int | None
    power: bool
    log: Path | None
    passed: int = 0

    @classmethod
    def from_env(cls) -> CrashPlan | None:
        """The plan the environment asks for, or None (the normal case)."""
        at, log = os.environ.get(CRASH_AT), os.environ.get(CRASH_LOG)
        if not at and not log:
            return None
        number, _, mode = (at or "").partition(":")
        return cls(int(number) if number else None, mode == "power", Path(log) if log else None)

    def point(self, where: str, what: str) -> bool:
        """Pass one point; True when it is the one to die at (the caller may do a last
        thing first, then calls ``die``)."""
        self.passed += 1
        if self.log is not None:
            line = json.dumps({"point": self.passed, "at": where, "record": what})
            with self.log.open("a") as fh:
                fh.write(line + "\n")
        return self.passed == self.at

    def die(self, fd: int, durable: int) -> None:
        """SIGKILL this process (after cutting the file back to ``durable`` bytes for a
        power cut)."""
        if self.power:
            os.ftruncate(fd, durable)
        os.kill(os.getpid(), signal.SIGKILL)


PLAN = CrashPlan.from_env()
"""This process's plan (None unless a crash test set one)."""


def arm(plan: CrashPlan | None) -> None:
    """Make ``plan`` this process's plan (None: no more crashes)."""
    global PLAN
    PLAN = plan
