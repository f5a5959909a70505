"""The approval modal: the exact command or diff, and the user's answer.

y allows once; for a command, a allows its prefix for the rest of the
session (when one is safe to offer); for an edit, a allows edits to this
file and A all edits for the session; n or Esc denies. Any other letter,
whatever has focus, starts the feedback, which goes to the model with a denial
(Enter denies with it); once it holds text every key types into it. The buttons
and key hints always show: a long diff scrolls inside the modal.
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
from textual.events import Key
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
    """The widget showing what would run or change (for an edit, the core's diff of the
    file as it is now, the one the card shows after; when some of its tokens were filled
    below the threshold, its added lines shaded token by token)."""
    diff = request.diff or proposed_diff(request)
    if diff is not None:
        low = request.low_confidence
        return DiffView(diff, short_lines=300, confidence=low, marked=bool(low and low.lines))
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


FIXED_ROWS = 14
"""Rows of the modal that are not the body: border, title, buttons, hints, feedback."""


def one_file(request: p.ApprovalRequested) -> bool:
    """Whether the edit names one file ("this file" can be offered; a patch names none)."""
    return isinstance(request.arguments.get("path"), str)


def key_hints(request: p.ApprovalRequested) -> Text:
    """The keys line, saying when no session-wide answer is offered and why."""
    out = Text(no_wrap=True, overflow="ellipsis")
    out.append("y", style="bold")
    out.append(" allow once · ")
    if request.kind == "edit":
        if one_file(request):
            out.append("a", style="bold")
            out.append(" this file · ")
        out.append("A", style="bold")
        out.append(" all edits this session · ")
    elif request.prefix:
        out.append("a", style="bold")
        out.append(f" `{clean(request.prefix)[:30]}` this session · ")
    elif request.name == "shell":
        out.append("no session rule for this command · ", style="dim")
    out.append("n", style="bold")
    out.append("/")
    out.append("Esc", style="bold")
    out.append(" deny")
    return out


def unsure_line(low: p.EditConfidence) -> Text:
    """How many changed tokens the model filled below the threshold, and where."""
    out = Text(no_wrap=True, overflow="ellipsis")
    if not low.tokens:
        out.append(f"No changed token was filled below {low.below:.2f}.", style="dim")
        return out
    lines = ", ".join(str(n) for n in low.lines[:12]) + (" …" if len(low.lines) > 12 else "")
    noun = "token" if low.tokens == 1 else "tokens"
    out.append(f"{low.tokens} of {low.changed} changed {noun}", style="bold")
    out.append(f" filled below {low.below:.2f}, on line{'s' if len(low.lines) > 1 else ''} ")
    out.append(lines, style="bold")
    out.append(" · ")
    out.append("F3", style="bold")
    out.append("/")
    out.append("Shift+F3", style="bold")
    out.append(" next/previous")
    return out


FEEDBACK_HINT = "Feedback with a denial: type any other key, then Enter"
"""The feedback field's placeholder: how to reach it from anywhere in the modal."""

ANSWER_KEYS = frozenset({"y", "a", "A", "n"})
"""The letters that answer the modal while the feedback field is empty."""


class ApprovalScreen(ModalScreen[p.ApprovalDecision]):
    """Asks whether one tool call may run; dismisses with the decision."""

    DEFAULT_CSS = sibling_css(__file__)
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("y", "decide('allow_once')", "Allow once"),
        Binding("a", "decide('allow_prefix')", "Allow for the session"),
        Binding("A", "decide('allow_edits')", "Allow all edits"),
        Binding("n", "decide('deny')", "Deny"),
        Binding("escape", "decide('deny')", "Deny", priority=True),
        Binding("f3", "jump(1)", "Next unsure line", show=False),
        Binding("shift+f3", "jump(-1)", "Previous unsure line", show=False),
    ]

    def __init__(self, request: p.ApprovalRequested) -> None:
        super().__init__()
        self.request = request
        self._allow = Button("Allow once (y)", id="allow_once", variant="success", compact=True)
        self._jump = -1
        """Index of the unsure line jumped to last (F3)."""

    def compose(self) -> ComposeResult:
        r = self.request
        with Vertical(id="dialog"):
            title = Text("Allow ", style="bold", no_wrap=True, overflow="ellipsis")
            title.append(r.name, style="bold yellow")
            title.append(f"?  {clean(r.summary).splitlines()[0][:200] if r.summary else ''}")
            yield Static(title, id="title")
            if r.low_confidence is not None:
                yield Static(unsure_line(r.low_confidence), id="unsure")
            with VerticalScroll(id="body"):
                yield request_body(r)
            with Horizontal(id="buttons"):
                yield self._allow
                if r.kind == "edit":
                    if one_file(r):
                        yield Button("This file (a)", id="allow_file", compact=True)
                    yield Button("All edits (A)", id="allow_edits", compact=True)
                elif r.prefix:
                    label = f"Allow `{clean(r.prefix)[:40]}` this session (a)"
                    yield Button(label, id="allow_prefix", compact=True)
                yield Button("Deny (n)", id="deny", variant="error", compact=True)
            yield Static(key_hints(r), id="hints")
            yield Input(placeholder=FEEDBACK_HINT, id="fb", select_on_focus=False)

    def on_mount(self) -> None:
        self._allow.focus()
        self._fit()

    def on_resize(self) -> None:
        self._fit()

    def _fit(self) -> None:
        # The body takes what is left, so the buttons and hints are never pushed off.
        fixed = FIXED_ROWS + (2 if self.request.low_confidence is not None else 0)
        self.query_one("#body").styles.max_height = max(3, self.size.height - fixed)

    def on_key(self, event: Key) -> None:
        # Typed feedback goes to its field whatever has focus (after Tab to a button,
        # the "n" of "no, ..." must not deny and lose the rest).
        field = self.query_one("#fb", Input)
        char = event.character
        if field.has_focus or char is None or not char.isprintable():
            return
        if char == " " and not field.value:
            return  # Space presses the focused button
        if field.value or char not in ANSWER_KEYS:
            event.stop()
            event.prevent_default()
            field.focus()
            field.insert_text_at_cursor(char)

    def action_jump(self, step: int) -> None:
        """Scroll the diff to the next (1) or previous (-1) line holding unsure tokens."""
        views = self.query(DiffView)
        shading = views.first().shading if views else None
        rows = shading.unsure if shading is not None else ()
        if not rows:
            return
        self._jump = (self._jump + step) % len(rows)
        body = self.query_one("#body", VerticalScroll)
        body.scroll_to(y=max(0, rows[self._jump] - 2), animate=False)

    @on(Button.Pressed)
    def _pressed(self, event: Button.Pressed) -> None:
        self.action_decide(event.button.id or "deny")

    @on(Input.Submitted, "#fb")
    def _feedback(self) -> None:
        self.action_decide("deny")

    def action_decide(self, decision: str) -> None:
        """Answer and close (a key for an answer not offered here does nothing)."""
        r = self.request
        if decision == "allow_prefix" and r.kind == "edit":
            if not one_file(r):
                return
            decision = "allow_file"
        if decision == "allow_prefix" and not r.prefix:
            if r.name == "shell":
                self.notify("No session rule is offered for this command.", timeout=3)
            return
        if decision == "allow_edits" and r.kind != "edit":
            return
        if decision not in ("allow_once", "allow_prefix", "allow_file", "allow_edits", "deny"):
            decision = "deny"
        feedback = self.query_one("#fb", Input).value.strip() or None
        self.dismiss(
            p.ApprovalDecision(
                request_id=r.request_id,
                decision=decision,
                feedback=feedback if decision == "deny" else None,
            )
        )
