"""What a child agent leaves: what it cost, what it changed, and what the parent hears.

``ChildWatch`` follows a child's events (tokens, the files its edit tools
changed, its last error); ``ChildOutcome`` is a child that ended; ``report``
turns one into the parent's tool result (a ``task`` call's, or a background
child's report), including, for a child that worked in its own worktree,
whether its changes were merged back or conflicted.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from clover_code import protocol as p
from clover_code.agent.extensions.agent_defs import AgentDefinition
from clover_code.protocol.cost import CostTally
from clover_code.tools.base import ToolResult

if TYPE_CHECKING:
    from clover_code.git.worktree_merge import MergeBack

__all__ = ["ChildOutcome", "ChildWatch", "SubagentStats", "report"]

_WHY = {
    "max_turns": "stopped at its request limit (subagent_max_turns)",
    "timeout": "hit its time limit (subagent_timeout)",
    "interrupted": "was interrupted",
    "max_cost": "stopped at the session's cost budget (max_cost)",
}


@dataclass(slots=True)
class SubagentStats:
    """What one child cost: for ``/cost`` and the headless result."""

    call_id: str
    agent: str
    tokens: int
    """Tokens the child generated, over all its requests."""
    duration_s: float
    status: p.TurnStatus
    cost: float | None = 0.0
    """What its requests cost; None when a model it used has no price."""

    def as_display(self, changed: list[str]) -> p.SubagentRun:
        """The stats (and the files the child changed) as the task call's display."""
        return p.SubagentRun(
            call_id=self.call_id,
            agent=self.agent,
            tokens=self.tokens,
            duration_s=round(self.duration_s, 3),
            status=self.status,
            changed_files=changed,
            cost=None if self.cost is None else round(self.cost, 8),
        )


@dataclass(slots=True)
class ChildWatch:
    """Follows a child's events: tokens, money, files it changed, its last error."""

    token_limit: int
    tokens: int = 0
    cost: CostTally = field(default_factory=CostTally)
    changed: list[str] = field(default_factory=list)
    last_error: str | None = None
    over_limit: str | None = None

    def see(self, event: p.Event) -> None:
        """Take note of one of the child's events."""
        self.cost.see(event)
        if isinstance(event, p.UsageReport):
            self.tokens += event.completion_tokens
            if self.tokens > self.token_limit and self.over_limit is None:
                self.over_limit = (
                    f"it generated {self.tokens:,} tokens, more than its limit of "
                    f"{self.token_limit:,} (subagent_max_tokens)"
                )
        elif isinstance(event, p.ErrorEvent):
            self.last_error = event.message
        elif isinstance(event, p.ToolCallFinished) and event.status == "ok":
            shown = event.display
            found: list[str] = []
            if isinstance(shown, p.FileEdit) and shown.diff:
                found = [shown.path]
            elif isinstance(shown, p.PatchApplied):
                found = list(shown.paths)
            self.changed += [path for path in found if path not in self.changed]


@dataclass(slots=True)
class ChildOutcome:
    """A child that ended: how, with what answer, at what cost."""

    call_id: str
    definition: AgentDefinition
    status: p.TurnStatus
    final_text: str
    watch: ChildWatch
    started: float
    ended: float = field(default_factory=time.monotonic)
    task_id: str | None = None
    kept_branch: str | None = None
    """The branch of its worktree (where unmerged work stays), if it had one."""

    @property
    def succeeded(self) -> bool:
        """Whether it completed within its limits (only then is its work merged back)."""
        return self.status == "completed" and self.watch.over_limit is None

    def stats(self) -> SubagentStats:
        """What it cost."""
        status: p.TurnStatus = self.status
        if self.status == "completed" and self.watch.over_limit is not None:
            status = "failed"
        return SubagentStats(
            self.call_id,
            self.definition.name,
            self.watch.tokens,
            self.ended - self.started,
            status,
            self.watch.cost.total,
        )


def report(
    outcome: ChildOutcome,
    *,
    merge: MergeBack | None = None,
    worktree_note: str | None = None,
) -> ToolResult:
    """The parent's result for ``outcome``: its answer (or why it failed), the files it
    changed and, for a worktree child, whether those changes are now in the parent's
    workspace (``merge``), or where its unmerged work is kept (``worktree_note``)."""
    lines: list[str] = []
    if outcome.succeeded:
        lines.append(outcome.final_text.strip() or "(the agent gave no answer)")
    else:
        why = _WHY.get(outcome.status, "failed")
        detail = outcome.watch.over_limit or outcome.watch.last_error
        name = outcome.definition.name
        lines.append(f"error: the {name} agent {why}" + (f": {detail}" if detail else "."))
    changed = list(outcome.watch.changed)
    if merge is not None:
        changed = list(merge.files)
        lines += _merge_lines(merge)
    elif changed:
        lines.append("Files it changed: " + ", ".join(changed))
    if worktree_note:
        lines.append(worktree_note)
    in_worktree = merge is not None or worktree_note is not None
    display = outcome.stats().as_display(changed)
    display = display.model_copy(
        update={
            "task_id": outcome.task_id,
            "isolation": "worktree" if in_worktree else "shared",
            "conflicted_files": [c.path for c in merge.conflicts] if merge else [],
            "kept_branch": outcome.kept_branch if worktree_note else None,
        }
    )
    error = not outcome.succeeded or (merge is not None and not merge.applied)
    return ToolResult("\n\n".join(lines), is_error=error, display=display)


def _merge_lines(merge: MergeBack) -> list[str]:
    """What the parent hears about a worktree child's changes."""
    if not merge.files:
        return ["It changed no files."]
    files = ", ".join(merge.files)
    if merge.applied:
        return [
            f"It worked in its own worktree; its changes were merged into your workspace: {files}"
        ]
    if not merge.conflicts:
        return [f"Its changes to {files} were not applied: {merge.problem}."]
    parts = [
        f"Its changes to {files} conflict with your workspace, so none of them were "
        "applied. The conflicting hunks (your workspace's lines first, then its lines):"
    ]
    for conflict in merge.conflicts:
        parts.append(f"--- {conflict.path}\n{conflict.hunks}")
    return parts
