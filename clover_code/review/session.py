"""A review in a session of its own (the app's ``/review``): always ``read-only``.

The session is opened through the factory with the ``read-only`` approval
mode and an approver that refuses, whatever mode the user works in: the
model reads and searches, and every edit, command or fetch it tries is
refused. Its answer is checked and retried by ``--output-schema``'s
machinery. (Headless ``clover-code review`` runs the same task through the
headless runner, which brings the result object, limits and signals.)
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from clover_code import protocol as p
from clover_code.agent.engines import Engines
from clover_code.agent.open import RefuseApprover, Session, SessionOptions, open_session
from clover_code.config.settings import ApprovalMode, Settings
from clover_code.engine.base import Backend
from clover_code.fs.workspace_root import find_root
from clover_code.outcome.output_schema import MAX_RETRIES, answer_to_schema
from clover_code.review.diff import DiffTarget, select_diff
from clover_code.review.findings import Finding, ReviewAnswer, by_severity
from clover_code.review.instructions import review_instructions
from clover_code.review.prompt import review_prompt, review_schema

__all__ = ["REVIEW_MODE", "ReviewReport", "open_review_session", "review_settings", "run_review"]

REVIEW_MODE: ApprovalMode = "read-only"
"""The approval mode every review runs in."""

Emit = Callable[[p.Event], None]


@dataclass(frozen=True, slots=True)
class ReviewReport:
    """How a review ended and what it found."""

    reviewed: str
    """What was reviewed."""
    root: Path
    """The workspace the findings' paths are relative to."""
    findings: list[Finding] = field(default_factory=list)
    summary: str = ""
    error: str | None = None
    """Why the review did not finish (None when it did)."""


def review_settings(settings: Settings) -> Settings:
    """``settings`` for a review: read-only, nothing committed."""
    return settings.model_copy(update={"approval": REVIEW_MODE, "auto_commit": False})


async def open_review_session(
    settings: Settings,
    cwd: Path,
    *,
    emit: Emit,
    engines: Engines | None = None,
    backend: Backend | None = None,
) -> Session:
    """A read-only session for a review (``backend``: a model the caller opened)."""
    settings = review_settings(settings)
    options = SessionOptions(
        emit=emit,
        approver=RefuseApprover(),
        approval_mode=REVIEW_MODE,
        engines=engines,
        backend=backend,
    )
    return await open_session(settings, cwd, options)


async def run_review(
    settings: Settings,
    cwd: Path,
    target: DiffTarget,
    *,
    emit: Emit,
    engines: Engines | None = None,
    backend: Backend | None = None,
    default_branch: Callable[[], str | None] | None = None,
) -> ReviewReport:
    """Review the diff ``target`` names, in a read-only session of its own.

    A diff that cannot be had raises ``UsageError``; an empty one is reported
    without asking the model. A review whose turn fails, or whose answer never
    matches the schema, comes back with ``error`` set.
    """
    root, _ = find_root(cwd)
    diff = await asyncio.to_thread(select_diff, root, target, default_branch=default_branch)
    if diff.empty:
        return ReviewReport(
            diff.what, root, summary=f"Nothing to review: no changes in {diff.what}."
        )
    schema = review_schema(root, diff)
    prompt = review_prompt(diff, review_instructions(root)) + schema.instructions()
    errors: list[str] = []

    def heard(event: p.Event) -> None:
        if isinstance(event, p.ErrorEvent):
            errors.append(event.message)
        emit(event)

    session = await open_review_session(settings, cwd, emit=heard, engines=engines, backend=backend)
    try:
        finished = await session.run_turn(p.UserInput(text=prompt))
        outcome = await answer_to_schema(session, schema, finished)
    finally:
        await asyncio.shield(session.close())
    if outcome.value is None:
        if outcome.problem is not None:
            error = (
                f"the review's answer never matched the findings schema (after {MAX_RETRIES} "
                f"retries): {outcome.problem}."
            )
        else:
            status = outcome.finished.status
            error = errors[-1] if errors else f"the review ended with status {status}."
        return ReviewReport(diff.what, root, error=error)
    answer = ReviewAnswer.model_validate(outcome.value)
    return ReviewReport(diff.what, root, by_severity(answer.findings), answer.summary)
