"""``/review [BASE]`` in the app: a review in a read-only session of its own, then its
findings in the transcript (Enter on one opens it at its lines).

The review runs beside the conversation (the user can go on working); its
progress is one line that says what it reads, and the session it opens
never edits: ``review.session`` opens it read-only whatever mode the app is in.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from clover_code import protocol as p
from clover_code.errors import CloverError
from clover_code.review.diff import DiffTarget
from clover_code.ui.text import clean
from clover_code.ui.widgets.findings import FindingsList
from clover_code.ui.widgets.notice_line import NoticeLine

if TYPE_CHECKING:
    from clover_code.ui.host import SlashHost
    from clover_code.ui.widgets.transcript import Transcript

__all__ = ["start_review"]


def _progress(line: NoticeLine, base: str) -> Callable[[p.Event], None]:
    """The review session's events, as the one progress line."""
    calls = 0

    def seen(event: p.Event) -> None:
        nonlocal calls
        if isinstance(event, p.ToolCallStarted) and event.kind != "other":
            calls += 1
            text = f"Reviewing {base}… ({calls} read: {event.name} {event.summary})"
            line.update(f"• {clean(text)}")

    return seen


def start_review(app: SlashHost, transcript: Transcript, arg: str) -> None:
    """Start ``/review [BASE]``: a worker runs it and shows the findings when done."""
    words = arg.split()
    if len(words) > 1 or (words and words[0].startswith("-")):
        transcript.add_note(
            "Say what to review against, or nothing for the default branch: /review [BASE].",
            "warning",
        )
        return
    if app.reviewer is None:
        transcript.add_note("Reviews need a model session; none is set up here.", "warning")
        return
    reviewer = app.reviewer
    base = words[0] if words else "the default branch"
    line = NoticeLine(f"Reviewing the changes since {base} (read-only)…")
    transcript.add_entry(line)

    async def review() -> None:
        try:
            report = await reviewer(
                DiffTarget(base=words[0] if words else None), _progress(line, base)
            )
        except CloverError as exc:
            line.update(f"✗ {clean(f'The review could not start: {exc}')}")
            line.set_classes("-error")
            return
        if report.error is not None:
            line.update(f"✗ {clean(f'The review of {report.reviewed} failed: {report.error}')}")
            line.set_classes("-error")
            return
        count = len(report.findings)
        line.remove()
        title = f"Review of {report.reviewed}: {count} finding{'s' if count != 1 else ''}"
        title += " (Enter opens one at its lines)" if count else ""
        transcript.add_entry(FindingsList(title, report.findings, report.summary, report.root))

    app.run_worker(review())
