"""The clocks the UI reads, in one place so tests can freeze them (spinners, rates, durations)."""

from __future__ import annotations

import time


class Clock:
    """Monotonic seconds for rates and spinners; tests replace ``now`` to freeze it."""

    frozen: float | None = None

    @classmethod
    def now(cls) -> float:
        """Seconds on a monotonic clock (or the frozen value)."""
        return cls.frozen if cls.frozen is not None else time.monotonic()


SPINNER = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"


def spinner_frame() -> str:
    """The spinner character for this moment (10 frames a second)."""
    return SPINNER[int(Clock.now() * 10) % len(SPINNER)]
