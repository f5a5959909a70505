"""A review's findings in the transcript: a list to move through, each opened at its line.

Enter (or a click) on a finding opens ``FindingScreen``: the finding, and the
file around its lines with those lines marked.
"""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from clover_code.review.findings import Finding
from clover_code.ui.css import sibling_css
from clover_code.ui.text import clean

__all__ = ["FindingScreen", "FindingsList", "excerpt"]

_STYLE = {"bug": "bold red", "risk": "bold yellow", "nit": "bold cyan"}
CONTEXT_LINES = 6
"""Lines shown above and below a finding's range."""
_MAX_BYTES = 2_000_000


def excerpt(root: Path, finding: Finding, context: int = CONTEXT_LINES) -> Text:
    """The lines of ``finding``'s file around its range, numbered, the range marked;
    a sentence instead when the file cannot be shown (outside the workspace, gone)."""
    real_root = root.resolve()
    path = (root / finding.file).resolve()
    if not path.is_relative_to(real_root) or not path.is_file():
        return Text(f"{finding.file} is not a file in the workspace (deleted by the change?).")
    try:
        if path.stat().st_size > _MAX_BYTES:
            return Text(f"{finding.file} is too large to show here.")
        lines = path.read_text("utf-8", errors="replace").splitlines()
    except OSError as exc:
        return Text(f"{finding.file} cannot be read ({exc.strerror}).")
    first = max(1, finding.line - context)
    last = min(len(lines), finding.last_line + context)
    width = len(str(last))
    shown = Text()
    for number in range(first, last + 1):
        marked = finding.line <= number <= finding.last_line
        gutter = f"{'▶' if marked else ' '} {number:>{width}} │ "
        shown.append(gutter, style="bold" if marked else "dim")
        shown.append(clean(lines[number - 1]), style="reverse" if marked else "")
        shown.append("\n")
    if finding.line > len(lines):
        shown.append(f"(the file has {len(lines)} lines; line {finding.line} is past its end)")
    return shown


def _heading(finding: Finding) -> Text:
    text = Text()
    text.append(f"{finding.severity:<4}", style=_STYLE[finding.severity])
    text.append(f"  {finding.where}  ", style="dim")
    text.append(clean(finding.title))
    return text


class FindingScreen(ModalScreen[None]):
    """One finding: what is wrong, and its file at its lines. Esc or q closes it."""

    DEFAULT_CSS = sibling_css(__file__)
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "dismiss", "Close", priority=True),
        Binding("q", "dismiss", "Close"),
    ]

    def __init__(self, finding: Finding, root: Path) -> None:
        super().__init__()
        self.finding = finding
        self.root = root

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Static(_heading(self.finding), id="title")
            if self.finding.body.strip():
                yield Static(Text(clean(self.finding.body.strip())), id="body")
            with VerticalScroll(id="code"):
                yield Static(excerpt(self.root, self.finding), id="excerpt")
            yield Static(Text("Esc closes", style="dim"), id="hint")

    async def action_dismiss(self, result: None = None) -> None:
        """Close the finding."""
        self.dismiss(result)


class FindingsList(Vertical):
    """What a review found: a title line, the findings (Enter opens one), the summary."""

    DEFAULT_CSS = sibling_css(__file__)

    def __init__(self, title: str, findings: list[Finding], summary: str, root: Path) -> None:
        super().__init__()
        self.title = title
        self.findings = findings
        self.summary = summary
        self.root = root

    def compose(self) -> ComposeResult:
        yield Static(Text(clean(self.title), style="bold"), classes="title")
        if self.findings:
            options = [Option(_heading(f), id=str(i)) for i, f in enumerate(self.findings)]
            yield OptionList(*options)
        if self.summary.strip():
            yield Static(Text(clean(self.summary.strip())), classes="summary")

    @on(OptionList.OptionSelected)
    def _open(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        self.app.push_screen(FindingScreen(self.findings[event.option_index], self.root))
