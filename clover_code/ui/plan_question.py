"""After a plan-mode turn: show the plan and ask whether to carry it out (and in which
approval mode) or to keep planning with feedback."""

from __future__ import annotations

from clover_code import protocol as p
from clover_code.ui.host import SessionHost
from clover_code.ui.widgets.status_bar import StatusBar
from clover_code.ui.widgets.transcript import Transcript

CARRY_OUT = "Carry out the plan."
"""The prompt sent when the user accepts the plan."""
CARRY_OUT_MODES: dict[str, p.ApprovalMode] = {"a": "ask", "e": "auto-edit", "f": "full-auto"}
"""The keys of the plan question that carry the plan out, and the mode each switches to
(the op is made when sent: making one at import would build its model at every start)."""


def ask_about_plan(
    app: SessionHost, transcript: Transcript, status_bar: StatusBar, plan: str
) -> None:
    """Show ``plan`` and act on the answer: switch the mode and send "carry out the plan",
    send the feedback (staying in plan mode), or nothing (Esc)."""
    if not plan.strip():
        return
    from clover_code.ui.widgets.choice import Choice, ChoiceScreen

    choices = [
        choice
        for choice in (
            Choice("a", "Carry it out, asking before each edit and command (ask)"),
            Choice("e", "Carry it out, editing without asking (auto-edit)"),
            Choice("f", "Carry it out without asking at all (full-auto)"),
        )
        if CARRY_OUT_MODES[choice.key] in app.approval_modes  # an administrator's limit
    ]

    def answered(answer: tuple[str, str] | None) -> None:
        if answer is None:
            transcript.add_note("Still in plan mode; say what to change in the plan.")
            return
        key, text = answer
        if key == "text":
            app.send_prompt(text)
            return
        op = p.SetApprovalMode(mode=CARRY_OUT_MODES[key])
        app.send(op)
        status_bar.approval = op.mode
        app.send_prompt(CARRY_OUT)

    app.push_screen(
        ChoiceScreen(
            "Carry out this plan?",
            plan.strip(),
            choices,
            text_hint="…or type feedback to keep planning, then Enter",
        ),
        answered,
    )
