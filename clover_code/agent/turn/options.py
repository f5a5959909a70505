"""What a turn runs with besides the conversation: the session's limits on every turn,
and the options of one turn.

``max_turns`` (the setting and ``--max-turns``) counts model requests, while a
"turn" is one user input everywhere else; here the limit is ``max_requests``.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["PLAIN_TURN", "TurnLimits", "TurnOptions"]


@dataclass(frozen=True, slots=True)
class TurnLimits:
    """When a turn stops: given to the ``Agent`` when it is built."""

    max_requests: int
    """Most model requests one turn makes (the ``max_turns`` setting)."""
    timeout: float | None = None
    """Seconds a turn may take, from its start (None: no limit)."""
    deadline: float | None = None
    """When set (event-loop time), turns end there instead of ``timeout`` after they
    start: headless mode's limit counts from the start of the run."""


@dataclass(frozen=True, slots=True)
class TurnOptions:
    """What one turn is asked to run with: passed to ``Agent.run_turn``."""

    allowed_tools: frozenset[str] | None = None
    """The only tools the model may call in this turn (a custom command's
    ``allowed-tools``; None: every tool)."""
    wait_for_background: bool = False
    """The turn does not end with a final answer while a background child agent
    still runs: it waits for the child and hands the model its report (headless)."""


PLAIN_TURN = TurnOptions()
"""A turn with no options (every tool on offer)."""
