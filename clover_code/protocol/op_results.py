"""The events that report what an op did to the session: undo, diff, compaction,
approval mode, model and commit.

Each answers its op (``UndoDone`` for ``Undo``, ``ModelChanged`` for
``SetModel``, ...); a few also come on their own (``Compacted`` when the context
fills, ``ModelChanged`` on resuming a session that had switched). ``ModelOption``
is one entry of the model menu a front end shows before a ``SetModel``. Members
of ``Event`` (``events.py``), re-exported by ``clover_code.protocol``.
"""

# Annotations are objects here, not text (no ``from __future__ import annotations``):
# pydantic reads every field's, and text would be compiled and evaluated at each start.

from typing import Literal

from clover_code.protocol.base import _Event, _Message
from clover_code.protocol.ops import ApprovalMode, RewindWhat


class UndoDone(_Event):
    """The workspace was restored to a checkpoint."""

    type: Literal["undo_done"] = "undo_done"
    turns: int
    files: list[str]
    """Paths (relative to the workspace) that were restored or removed."""
    turn: int | None = None
    """The oldest turn undone (its number in the session)."""
    forgotten: bool = False
    """The undone turns were also removed from the conversation the model sees (not
    possible when it was compacted or cleared since)."""
    what: RewindWhat = "both"
    """What was asked for: files restored, conversation cut back, or both."""
    still_held: bool = False
    """Files only: the conversation still holds the undone turns (it was not cut back,
    compacted or cleared since)."""


class DiffReport(_Event):
    """What the agent changed this session, as a unified diff."""

    type: Literal["diff_report"] = "diff_report"
    diff: str
    files: list[str]


class Compacted(_Event):
    """Older turns were summarised to free context."""

    type: Literal["compacted"] = "compacted"
    summary: str
    tokens_before: int
    tokens_after: int
    cost: float | None = 0.0
    """What the summary request cost (see ``UsageReport.cost``); null when unpriced."""


class ApprovalModeChanged(_Event):
    """The approval mode now in force (after a ``SetApprovalMode``)."""

    type: Literal["approval_mode_changed"] = "approval_mode_changed"
    mode: ApprovalMode


class ModelChanged(_Event):
    """The model the session uses from the next request on (after a ``SetModel``, or
    on resuming a session that had switched)."""

    type: Literal["model_changed"] = "model_changed"
    model: str
    """The id the server is asked for."""
    name: str
    """What was asked for: the id, or a name of the ``[models]`` table."""
    context_window: int
    """Its context window, in tokens."""
    vision: bool | None = None
    """Whether images go to it: true, false (text only), or None (sent until its server
    refuses them)."""


class ModelOption(_Message):
    """A model the session could switch to (what ``/model`` and an editor's model
    menu list)."""

    name: str
    """What ``SetModel`` takes for it: a name of the ``[models]`` table, else the id."""
    id: str
    """The id the server lists."""
    current: bool = False
    """The session uses it now."""
    served: bool = True
    """The server lists it now (False: only configured, or the server did not say)."""
    context_window: int | None = None
    """Its context window, when configured or reported by the server."""
    vision: bool | None = None
    """Whether it takes images, when configured."""


class AutoCommitted(_Event):
    """The answer to ``AutoCommit``: the new commit, or None when nothing changed."""

    type: Literal["auto_committed"] = "auto_committed"
    commit: str | None = None
