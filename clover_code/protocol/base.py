"""The base models of the protocol: what every op and every event shares.

An op carries an ``id``; the events it causes carry it back as ``op_id``.
This module imports nothing else of clover-code.
"""

# Annotations are objects here, not text (no ``from __future__ import annotations``):
# pydantic reads every field's, and text would be compiled and evaluated at each start.

import uuid
from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class _Message(BaseModel):
    # A run meets a dozen of the sixty ops and events: each is made ready for
    # validation and dumping at its first use, not when the protocol is imported.
    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)


def new_op_id() -> str:
    """A fresh op id (unique within the process and across runs)."""
    return uuid.uuid4().hex[:12]


class _Op(_Message):
    """An operation; its ``id`` comes back as ``op_id`` on the events it causes."""

    type: str
    id: str = Field(default_factory=new_op_id)

    # As in a submission that wraps an op, the id names one sending of the op, not
    # what it asks for: two ops asking for the same thing are equal.
    def __eq__(self, other: object) -> bool:
        if not isinstance(other, _Op):
            return NotImplemented
        return type(self) is type(other) and self._asked() == other._asked()

    def __hash__(self) -> int:
        # The JSON text: an op's lists (a prompt's images) have no hash of their own.
        return hash((type(self), self.model_dump_json(exclude={"id"})))

    def _asked(self) -> dict[str, Any]:
        return self.model_dump(exclude={"id"})


class _Event(_Message):
    """An event; ``op_id`` names the op that caused it (None: the session's own)."""

    type: str
    op_id: str | None = None
