"""The approval modal: the exact command or diff, and the user's answer.

y allows once, a allows the command prefix for the rest of the session, n
or Esc denies; text typed in the feedback field goes to the model with a
denial (Enter there denies with it).
"""

from __future__ import annotations

import difflib
import json
from typing import ClassVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Static

from clover_code import protocol as p
from clover_code.ui.css import sibling_css
from clover_code.ui.text import clean, cut_lines
from clover_code.ui.widgets.diff_view import DiffView


def proposed_diff(request: p.ApprovalRequested) -> str | None:
    """A diff of what an edit or write would do, from its arguments (None for other tools)."""
    args = request.arguments
    path = str(args.get("path", "file"))
    if request.name == "edit_file":
        old, new = str(args.get("old_string", "")), str(args.get("new_string", ""))
    elif request.name == "write_file":
        old, new = "", str(args.get("content", ""))
    else:
        return None
    lines = difflib.unified_diff(
        old.splitlines(keepends=True),
        new.splitlines(keepends=True),
        f"a/{path}",
        f"b/{path}",
        n=2,
    )
    return "".join(line if line.endswith("\n") else line + "\n" for line in lines)


def request_body(request: p.ApprovalRequested) -> Static:
    """The widget showing what would run or change."""
    diff = proposed_diff(request)
    if diff is not None:
        return DiffView(diff, short_lines=300)
    if request.name == "shell":
        command = clean(str(request.arguments.get("command", request.summary)))
        lines, left = cut_lines(command, 60, 2000)
        text = Text("$ ", style="bold")
        text.append("\n  ".join(lines), style="bold")
        if left:
            text.append(f"\n… {left:,} more lines", style="dim")
        return Static(text, classes="command")
    dumped = clean(json.dumps(request.arguments, indent=2, ensure_ascii=False))
    lines, left = cut_lines(dumped, 60, 500)
    return Static(Text("\n".join(lines)), classes="command")


class ApprovalScreen(ModalScreen[p.ApprovalDecision]):
    """Asks whether one tool call may run; dismisses with the decision."""

    DEFAULT_CSS = sibling_css(__file__)
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("y", "decide('allow_once')", "Allow once"),
        Binding("a", "decide('allow_prefix')", "Allow prefix"),
        Binding("n", "decide('deny')", "Deny"),
        Binding("escape", "decide('deny')", "Deny", priority=True),
    ]

    def __init__(self, request: p.ApprovalRequested) -> None:
        super().__init__()
        self.request = request
        self._allow = Button("Allow once (y)", id="allow_once", variant="success")

    def compose(self) -> ComposeResult:
        r = self.request
        with Vertical(id="dialog"):
            title = Text("Allow ", style="bold")
            title.append(r.name, style="bold yellow")
            title.append(f"?  {clean(r.summary)[:200]}", style="")
            yield Static(title, id="title")
            with VerticalScroll(id="body"):
                yield request_body(r)
            with Horizontal(id="buttons"):
                yield self._allow
                if r.prefix:
                    yield Button(
                        f"Allow `{clean(r.prefix)[:40]}` this session (a)", id="allow_prefix"
                    )
                yield Button("Deny (n)", id="deny", variant="error")
            yield Input(placeholder="Feedback for the model with a denial (optional)", id="fb")

    def on_mount(self) -> None:
        self._allow.focus()

    @on(Button.Pressed)
    def _pressed(self, event: Button.Pressed) -> None:
        self.action_decide(event.button.id or "deny")

    @on(Input.Submitted, "#fb")
    def _feedback(self) -> None:
        self.action_decide("deny")

    def action_decide(self, decision: str) -> None:
        """Answer and close."""
        if decision == "allow_prefix" and not self.request.prefix:
            return
        if decision not in ("allow_once", "allow_prefix", "deny"):
            decision = "deny"
        feedback = self.query_one("#fb", Input).value.strip() or None
        self.dismiss(
            p.ApprovalDecision(
                request_id=self.request.request_id,
                decision=decision,
                feedback=feedback if decision == "deny" else None,
            )
        )
