"""``/fork`` and ``/rewind N files|conversation|both`` in the app."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import get_args

from clover_code import protocol as p
from clover_code.ui.host import SessionHost
from clover_code.ui.widgets.choice import Choice, ChoiceScreen
from clover_code.ui.widgets.prompt_input import PromptInput
from clover_code.ui.widgets.transcript import Transcript

REWIND_CHOICES = get_args(p.RewindWhat)
_KEYS = {"f": "files", "c": "conversation", "b": "both"}


def fork(app: SessionHost, transcript: Transcript, open_path: Callable[[Path, str], None]) -> None:
    """Copy this session's conversation into a new session and continue in that one
    (``open_path(path, note)``); the original stays as it is (``/resume`` reopens it)."""
    from clover_code.agent.open import fork_session
    from clover_code.errors import CloverError

    started = app.started
    if started is None or app.bridge.session is None:
        transcript.add_note("No session is open to fork.", "warning")
        return
    if app.turn_running:
        transcript.add_note("Interrupt the running turn (Esc) before forking.", "warning")
        return
    source = Path(started.transcript)
    try:
        path = fork_session(source, source.parent)
    except CloverError as exc:
        transcript.add_note(str(exc), "error")
        return
    open_path(
        path,
        f"Forked session {started.session_id} into {path.stem}; "
        f"/resume {started.session_id} goes back to the original.",
    )


def rewind(
    app: SessionHost,
    transcript: Transcript,
    turns: int,
    what: str,
    force: bool,
    details: list[str],
) -> None:
    """Rewind ``turns`` turns: ``what`` is files, conversation or both, or empty to ask."""

    def send(choice: str) -> None:
        app.rewinding = True
        app.send(p.Undo(turns=turns, force=force, what=choice))
        transcript.add_note("Rewind requested…")

    if what:
        send(what)
        return

    def answered(answer: tuple[str, str] | None) -> None:
        if answer is not None and answer[0] in _KEYS:
            send(_KEYS[answer[0]])

    back = "the last turn" if turns == 1 else f"the last {turns} turns"
    choices = [
        Choice("f", "Files: put back the files those turns changed"),
        Choice("c", "Conversation: cut it back to before them; the prompt returns to edit"),
        Choice("b", "Both"),
    ]
    app.push_screen(ChoiceScreen(f"Rewind {back}: what?", "\n".join(details), choices), answered)


def rewound(app: SessionHost, prompt: PromptInput, event: p.UndoDone) -> None:
    """After a rewind that cut the conversation: that turn's prompt goes back in the
    input (after /undo, which cuts it too, the prompts are only forgotten)."""
    if event.what != "conversation":  # those turns' checkpoints are spent
        del app.turn_files[len(app.turn_files) - event.turns :]
    asked, app.rewinding = app.rewinding, False
    if event.what == "files" or not event.forgotten:
        return
    prompts = app.turn_prompts
    text = prompts[-event.turns] if 0 < event.turns <= len(prompts) else None
    del prompts[max(0, len(prompts) - event.turns) :]
    if asked and text is not None:
        prompt.load_text(text)
        prompt.focus()
