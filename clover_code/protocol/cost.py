"""The money a session's events report, summed the one way every front end shows it.

``UsageReport.cost`` (each model response, a child agent's too, inside its
``SubagentEvent``) and ``Compacted.cost`` (a summary request) carry what each
request cost; one null among them (a model without a price) makes the total
unknown.
"""

from __future__ import annotations

from clover_code.protocol.events import Event, SubagentEvent
from clover_code.protocol.op_results import Compacted
from clover_code.protocol.output_events import UsageReport

__all__ = ["CostTally", "money"]


def money(amount: float) -> str:
    """An amount as shown to people: cents, or four decimals for less than a cent."""
    if amount == 0 or amount >= 0.01:
        return f"${amount:,.2f}"
    return f"${amount:.4f}"


class CostTally:
    """The running total of the costs a session's events report."""

    def __init__(self) -> None:
        self.total: float | None = 0.0
        """Money spent so far; None once a request's cost was unknown."""

    def see(self, event: Event) -> None:
        """Count ``event``'s cost, if it reports one."""
        inner = event.event if isinstance(event, SubagentEvent) else event
        if not isinstance(inner, UsageReport | Compacted):
            return
        cost = inner.cost
        if cost is None or self.total is None:
            self.total = None
            return
        self.total += cost

    def shown(self) -> str:
        """The total for people: ``$0.12``, or ``unknown`` when a model had no price."""
        return "unknown" if self.total is None else money(self.total)
