"""A unified diff, coloured line by line and cut to a readable size.

Lines longer than ``LINE_LIMIT`` and diffs longer than ``max_lines`` are cut
with a note saying how much, so a 5 MB one-line file costs no more to show
than a small one.
"""

from __future__ import annotations

import re

from rich.style import Style
from rich.text import Span, Text
from textual.widgets import Static

from clover_code.ui.css import sibling_css
from clover_code.ui.text import clean, cut_lines

LINE_LIMIT = 400
GUTTER = 4
"""Columns of the line number before each code line (the new file's, the old one's for
a removed line)."""
_HUNK = re.compile(r"@@ -(\d+)(?:,\d+)? \+(\d+)")

_STYLES = {
    "+": "green",
    "-": "red",
    "@": "cyan",
}
_BACKGROUNDS = {"+": "on #12301a", "-": "on #3a1414"}
_UNSURE = "on #5c4700"
"""An added line holding tokens filled with low confidence: amber, apart from both (the
diff's backgrounds are dark in every theme, under the highlighter's light colours)."""
_THEME = "monokai"


def render_diff(diff: str, max_lines: int, unsure: frozenset[int] = frozenset()) -> Text:
    """The diff as styled text: code highlighted for its file's language, additions on
    green, removals on red, hunk headers cyan; added lines whose new number is in
    ``unsure`` (tokens the model filled with low confidence) tinted and marked ``?``."""
    lines, left_out = cut_lines(clean(diff), max_lines, LINE_LIMIT)
    out = Text(no_wrap=False)
    code = _highlight_code(lines)
    old_no = new_no = 0
    for index, line in enumerate(lines):
        if line.startswith(("+++", "---")):
            out.append(line + "\n", style="bold")
        elif index in code:
            mark = line[:1]
            number = old_no if mark == "-" else new_no
            old_no += mark != "+"
            new_no += mark != "-"
            flagged = mark == "+" and number in unsure
            out.append(f"{number:>{GUTTER}}" + ("" if flagged else " "), style="dim")
            body = code[index].copy()
            if flagged:
                body.stylize(_UNSURE)
                out.append("?", style="bold")
            elif mark in _BACKGROUNDS:
                body.stylize(_BACKGROUNDS[mark])
            out.append(mark or " ", style=_STYLES.get(mark, "dim"))
            out.append_text(body)
            out.append("\n")
        else:
            if hunk := _HUNK.match(line):
                old_no, new_no = int(hunk.group(1)), int(hunk.group(2))
            out.append(line + "\n", style=_STYLES.get(line[:1], ""))
    if left_out:
        out.append(f"… {left_out:,} more diff lines not shown\n", style="dim italic")
    out.rstrip()
    return out


def _foreground(style: str | Style) -> Style:
    parsed = Style.parse(style) if isinstance(style, str) else style
    return Style(color=parsed.color, bold=parsed.bold, italic=parsed.italic)


def _highlight_code(lines: list[str]) -> dict[int, Text]:
    """Highlighted code of the context/added/removed lines, by line index; each file's
    lines are highlighted together with the lexer its name suggests."""
    result: dict[int, Text] = {}
    path = ""
    section: list[int] = []

    # Imported at the first diff shown: Rich's Syntax brings Pygments, which the app
    # does not need to start.
    from rich.syntax import Syntax

    def flush() -> None:
        if not section:
            return
        lexer = Syntax.guess_lexer(path or "x.txt")
        source = "\n".join(lines[i][1:] for i in section)
        highlighted = Syntax(source, lexer, theme=_THEME).highlight(source)
        highlighted.remove_suffix("\n")
        # Keep the theme's colours but not its background: the card's shows through,
        # and added/removed lines get their own.
        highlighted.style = ""
        highlighted.spans = [
            Span(span.start, span.end, _foreground(span.style)) for span in highlighted.spans
        ]
        for index, text in zip(section, highlighted.split("\n"), strict=False):
            result[index] = text
        section.clear()

    for index, line in enumerate(lines):
        if line.startswith("+++ "):
            flush()
            name = line[4:].strip()
            path = name[2:] if name.startswith(("a/", "b/")) else name
        elif line.startswith(("+", "-", " ")) and not line.startswith("--- "):
            section.append(index)
        else:
            flush()
    flush()
    return result


class DiffView(Static):
    """Shows one diff; ``expanded`` shows up to ``full_lines`` instead of ``short_lines``."""

    DEFAULT_CSS = sibling_css(__file__)

    def __init__(
        self,
        diff: str,
        *,
        short_lines: int = 40,
        full_lines: int = 2000,
        classes: str = "",
        unsure: frozenset[int] = frozenset(),
        marked: bool = False,
    ) -> None:
        self.diff = diff
        self.short_lines = short_lines
        self.full_lines = full_lines
        self.unsure = unsure
        """New-file lines holding tokens filled with low confidence (marked when shown)."""
        self.marked = marked
        self._expanded = False
        super().__init__(self._text(), classes=classes)

    def _text(self) -> Text:
        lines = self.full_lines if self._expanded else self.short_lines
        unsure = self.unsure if self.marked else frozenset()
        return render_diff(self.diff, lines, unsure)

    def toggle(self) -> None:
        """Switch between the short and the long view."""
        self._expanded = not self._expanded
        self.update(self._text())

    def mark(self, on: bool) -> None:
        """Show or hide the marks of the unsure lines."""
        if on != self.marked:
            self.marked = on
            self.update(self._text())
