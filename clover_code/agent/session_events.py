"""Which op caused a session's event, and which events its transcript keeps.

``CAUSE`` holds the id of the op the session is acting on (a turn task it
starts inherits it) and ``caused`` stamps it on each event the session
emits. ``NOT_RECORDED`` names the events too frequent or too bulky to be
worth a durable transcript line each, for the session's own events and for
a child agent's (``bulky_child_event``).
"""

from __future__ import annotations

from contextvars import ContextVar

from clover_code import protocol as p

__all__ = ["CAUSE", "NOT_RECORDED", "bulky_child_event", "caused"]

CAUSE: ContextVar[str | None] = ContextVar("clover_op_id", default=None)
"""The id of the op being acted on; the turn task it starts inherits it."""


def caused(event: p.Event) -> p.Event:
    """``event`` with the id of the op that caused it (as the session emits it)."""
    cause = CAUSE.get()
    if cause is None or event.op_id is not None:
        return event
    return event.model_copy(update={"op_id": cause})


# Events too frequent or too bulky to be worth a durable line each.
# Committed blocks are left out too: their text is in the assistant message, and
# a durable write per block (up to ~200 a second) would hold up the front end.
NOT_RECORDED = frozenset(
    {
        "block_draft",
        "block_committed",
        "tool_output",
        "content_delta",
        "reasoning_delta",
        # The answer's confidences as it streams; ``answer_confidence`` records them all.
        "answer_confidence_delta",
    }
)


def bulky_child_event(event: p.Event) -> bool:
    """A child agent's event of a kind that is not recorded for the parent either."""
    return isinstance(event, p.SubagentEvent) and event.event.type in NOT_RECORDED
