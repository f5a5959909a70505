"""The ``Sandbox`` interface the shell tool runs commands through."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol


@dataclass(slots=True)
class ExecResult:
    """The outcome of one command.

    ``output`` is stdout and stderr interleaved, capped head + tail with a
    truncation marker; ``exit_code`` is None when the command was killed.
    """

    exit_code: int | None
    output: str
    truncated: bool = False
    timed_out: bool = False
    cancelled: bool = False
    duration: float = 0.0


class Sandbox(Protocol):
    """Runs shell commands. The working directory persists between commands;
    the environment does not."""

    kind: str
    """"host", "docker" or "bwrap": shown to the user."""

    async def exec(
        self,
        command: str,
        *,
        timeout: float,
        on_output: Callable[[str], None] | None = None,
    ) -> ExecResult:
        """Run ``command`` with ``bash -c`` in the current directory."""
        ...

    async def close(self) -> None:
        """Stop whatever the sandbox started."""
        ...
