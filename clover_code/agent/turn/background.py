"""What the turn loop needs of work that goes on beside it: background child agents.

The loop knows them only through ``BackgroundWork`` (the subagent runner
implements it, in ``agent/extensions``, which imports the loop): before each
model request it takes the reports of the children that ended since the last
one, each exactly once, and adds them to the conversation as user messages
(recorded, so a resumed session has them too); a turn asked to wait for them
(``TurnOptions.wait_for_background``: headless) does not end with a final
answer while one still runs.
"""

from __future__ import annotations

from typing import Protocol

__all__ = ["BackgroundWork"]


class BackgroundWork(Protocol):
    """Children that run on after the call that started them returned."""

    def pending(self) -> bool:
        """Whether a child still runs, or ended and was not reported yet."""
        ...

    async def prepare(self) -> None:
        """Get the ended children's reports ready (a worktree child's changes are
        merged now, inside the turn, so undoing the turn undoes them); what is
        ready stays ready if the turn is interrupted meanwhile."""
        ...

    def take(self) -> list[str]:
        """The reports that are ready, each given out once."""
        ...

    async def wait(self) -> None:
        """Return once one more child has ended (at once when one ended unreported)."""
        ...
