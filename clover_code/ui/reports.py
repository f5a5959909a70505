"""Events that become a line (or a diff) in the transcript: notices, errors, undo, compaction."""

from __future__ import annotations

from clover_code import protocol as p
from clover_code.ui.host import SessionHost
from clover_code.ui.widgets.prompt_input import PromptInput
from clover_code.ui.widgets.status_bar import StatusBar
from clover_code.ui.widgets.transcript import Transcript


class Reports:
    """Shows the events that report rather than stream, on the widgets it is given."""

    def __init__(
        self,
        app: SessionHost,
        *,
        transcript: Transcript,
        status_bar: StatusBar,
        prompt: PromptInput,
    ) -> None:
        self.app = app
        self.transcript = transcript
        self.status_bar = status_bar
        self.prompt = prompt
        """Where a rewind puts the rewound turn's prompt back."""

    def apply(self, event: p.Event) -> None:
        """Events that become a line (or a diff) in the transcript."""
        t = self.transcript
        if isinstance(event, p.Notice):
            t.add_note(event.text, event.level)
        elif isinstance(event, p.ApprovalModeChanged):
            self.status_bar.approval = event.mode
        elif isinstance(event, p.ErrorEvent):
            alert(t, event.message, "error")
            t.add_note(event.message, "error")
        elif isinstance(event, p.DiffReport):
            files = ", ".join(event.files) or "no files"
            t.add_diff(f"Changes this session ({files}):", event.diff)
        elif isinstance(event, p.UndoDone):
            t.add_note(undo_text(event))
            from clover_code.ui.rewind import rewound  # loaded with the first rewind

            rewound(self.app, self.prompt, event)
            self.app.refresh_git()
        elif isinstance(event, p.Compacted):
            t.add_note(
                f"Compacted the conversation: {event.tokens_before:,} → "
                f"{event.tokens_after:,} tokens."
            )
            self.status_bar.context_used = event.tokens_after
        elif isinstance(event, p.JobsChanged):
            self.app.jobs = list(event.jobs)
            self.status_bar.jobs = sum(1 for job in event.jobs if job.state == "running")
        elif isinstance(event, p.ModelChanged):
            started = self.app.started
            if started is not None:
                self.app.started = started.model_copy(update={"model": event.model})
            self.status_bar.model = event.model
            self.status_bar.context_window = event.context_window
            t.add_note(model_text(event))
        elif isinstance(event, p.TodoUpdated):
            marks = {"pending": "☐", "in_progress": "◐", "done": "☑"}
            items = [f"{marks[i.status]} {i.text}" for i in event.items]
            t.add_note("\n  ".join(["Plan:", *items]))

    def session_started(self, event: p.SessionStarted) -> None:
        """A session opened: the status bar and the first lines of the transcript."""
        self.app.started = event
        bar = self.status_bar
        bar.engine, bar.model, bar.sandbox, bar.approval = (
            event.engine,
            event.model,
            event.sandbox,
            event.approval,
        )
        verb = "Resumed" if event.resumed else "Session"
        self.transcript.add_note(f"{verb} {event.session_id} in {event.cwd}")
        if not event.resumed:
            self.transcript.add_note(
                "Ask for a change or a question · @ mentions a file · /help lists commands"
            )
        self.app.refresh_git()
        if event.checkpoint_warning:
            self._ask_checkpoints(event.checkpoint_warning)

    def _ask_checkpoints(self, warning: str) -> None:
        """Ask before the first snapshot of a huge workspace; the answer goes to the core."""
        from clover_code.ui.widgets.confirm import ConfirmScreen

        def answered(yes: bool | None) -> None:
            self.app.send(p.AllowCheckpoints(allow=bool(yes)))

        details = [warning, "", "No: work without checkpoints (no /undo, no /diff)."]
        self.app.push_screen(
            ConfirmScreen("Snapshot this folder so turns can be undone?", details), answered
        )


def model_text(event: p.ModelChanged) -> str:
    """The line saying which model the session uses from the next request on."""
    named = f"{event.name} ({event.model})" if event.name != event.model else event.model
    images = "" if event.vision is None else "; it takes images" if event.vision else "; text only"
    return (
        f"Model {named} from the next request on: a {event.context_window:,}-token window{images}."
    )


def undo_text(event: p.UndoDone) -> str:
    """Which turns were undone, which files came back, and that the model still knows."""
    files = ", ".join(event.files) or "no files"
    if event.turn is None:
        which = "the last turn" if event.turns == 1 else f"the last {event.turns} turns"
    else:
        which = f"turn {event.turn}"
        if event.turns > 1:
            which += f" and the {event.turns - 1} after it"
    those = "that turn" if event.turns == 1 else "those turns"
    if event.what == "conversation":
        return f"Cut the conversation back to before {which}; the files stay as they are."
    if event.what == "files":
        held = "still holds" if event.still_held else "no longer holds"
        return f"Restored {files} as before {which}; the conversation {held} {those}."
    if event.forgotten:
        return f"Undid {which}: restored {files}, and removed {those} from the conversation."
    return (
        f"Undid {which}: restored {files}. The conversation still holds {those} (it was "
        "compacted or cleared since), so tell the model what was undone if it matters."
    )


def alert(transcript: Transcript, text: str, title: str) -> None:
    """An error the transcript is about to show: a toast as well only when the reader has
    scrolled away from the end, where the line would not be seen (else it is said twice)."""
    if transcript.max_scroll_y - max(0, transcript.scroll_offset.y) > 1:
        transcript.notify(text, title=title, severity="error", timeout=8)
