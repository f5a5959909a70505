"""``/undo [--force]`` in the app: which turns' changes it reverts, and the question
asked first (the core finds the turns in its checkpoints)."""

from __future__ import annotations

from clover_code import protocol as p
from clover_code.ui.host import SessionHost
from clover_code.ui.widgets.transcript import Transcript

__all__ = ["confirm_undo", "removed_turns"]


def removed_turns(prompts: list[str], turns: int) -> list[str]:
    """The lines naming each of the last ``turns`` turns that an undo takes out of the
    conversation, numbered from the session's first turn, with its prompt."""
    first = max(0, len(prompts) - turns)
    shown = [
        f"  turn {n}: {' '.join(prompt.split())[:60]}"
        for n, prompt in enumerate(prompts[first:], first + 1)
    ]
    if not shown:
        return []
    head = "and removes this turn" if len(shown) == 1 else f"and removes these {len(shown)} turns"
    return ["", f"{head} from the conversation:", *shown]


def confirm_undo(
    app: SessionHost, transcript: Transcript, turns: int, arg: str, *, last_change: bool = False
) -> None:
    """Ask whether to revert the last ``turns`` turns' changes (the last turn that changed
    files with ``last_change``), naming the files and the turns; undo them on yes."""
    force = "--force" in arg.split()
    if app.turn_running:
        transcript.add_note("Interrupt the running turn (Esc) before undoing.", "warning")
        return
    recent = app.turn_files[-turns:] if app.turn_files else []
    files = sorted({path for turn in recent for path in turn})
    details = [f"  {path}" for path in files] or ["  (no file edits recorded in this view)"]
    what = "the last turn" if turns == 1 else f"the last {turns} turns"
    if last_change:
        what = "the last turn that changed files" + (f" ({turns} turns back)" if turns > 1 else "")
    details += removed_turns(app.turn_prompts, turns)

    def answered(yes: bool | None) -> None:
        if yes:
            app.send(p.Undo(turns=turns, force=force, last_change=last_change))
            transcript.add_note("Undo requested…")

    from clover_code.ui.widgets.confirm import ConfirmScreen

    app.push_screen(
        ConfirmScreen(f"Revert the changes {what} made to these files?", details), answered
    )
