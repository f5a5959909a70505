"""A slash command's row, and the table that a decorator on each command's method builds.

``SlashCommands`` (``slash.py``) registers each command once, on the method
that runs it; the table's rows, in the order the methods are written, are
what ``/help``, the prompt's completion and the command palette list.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

__all__ = ["CommandTable", "SlashCommand"]

Owner = TypeVar("Owner")
Run = Callable[[Owner, str], None]
"""A command's method: called with its argument text (may be empty)."""


@dataclass(frozen=True, slots=True)
class SlashCommand:
    """A command the prompt understands."""

    name: str
    help: str
    args: str = ""


class CommandTable(Generic[Owner]):
    """The slash commands of ``Owner`` in the order they were registered, each with its method."""

    def __init__(self) -> None:
        self._runs: dict[str, Run[Owner]] = {}
        self._rows: list[SlashCommand] = []

    def command(self, name: str, help: str, args: str = "") -> Callable[[Run[Owner]], Run[Owner]]:
        """Register the decorated method as ``/name``; ``help`` and ``args`` (its usage) are
        what /help, completion and the palette show."""

        def register(run: Run[Owner]) -> Run[Owner]:
            if name in self._runs:
                raise ValueError(f"/{name} is registered twice")
            self._runs[name] = run
            self._rows.append(SlashCommand(name, help, args))
            return run

        return register

    @property
    def rows(self) -> tuple[SlashCommand, ...]:
        """Every command, in the order registered."""
        return tuple(self._rows)

    def find(self, text: str) -> tuple[Run[Owner], str] | None:
        """``(method, argument)`` when ``text`` is ``/name args`` of a known command, else None."""
        if not text.startswith("/"):
            return None
        name, _, arg = text[1:].strip().partition(" ")
        run = self._runs.get(name.lower())
        return (run, arg.strip()) if run is not None else None
