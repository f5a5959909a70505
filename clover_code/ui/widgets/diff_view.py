"""A unified diff, coloured line by line and cut to a readable size.

Lines longer than ``LINE_LIMIT`` and diffs longer than ``max_lines`` are cut
with a note saying how much, so a 5 MB one-line file costs no more to show
than a small one.
"""

from __future__ import annotations

import re

from textual.content import Content, Span
from textual.widgets import Static

from clover_code.protocol.confidence import EditConfidence
from clover_code.ui.confidence import DiffShading, shaded_content
from clover_code.ui.css import MUTED, sibling_css
from clover_code.ui.text import clean, cut_line, cut_lines

LINE_LIMIT = 400
GUTTER = 4
"""Columns of the line number before each code line (the new file's, the old one's for
a removed line)."""
_HUNK = re.compile(r"@@ -(\d+)(?:,\d+)? \+(\d+)")

# Every colour is one of the theme's variables, so a diff stays readable in each
# theme (and follows a change of theme without being drawn again).
_BACKGROUNDS = {"+": "on $success-muted", "-": "on $error-muted"}
_MARKS = {"+": "bold on $success-muted", "-": "bold on $error-muted", "@": "$text-accent"}
_TOKENS: tuple[tuple[str, str], ...] = (
    ("Token.Comment", f"italic {MUTED}"),
    ("Token.Literal.String", "$text-success"),
    ("Token.Literal.Number", "$text-warning"),
    ("Token.Keyword", "bold $text-primary"),
    ("Token.Operator.Word", "bold $text-primary"),
    ("Token.Name.Builtin", "$text-secondary"),
    ("Token.Name.Function", "$text-secondary"),
    ("Token.Name.Class", "bold $text-secondary"),
    ("Token.Name.Decorator", "$text-accent"),
)
"""The style of each kind of Pygments token, by the kind's dotted name (a kind is
matched with the kinds below it: ``Token.Literal.String.Double`` is a string)."""
_UNSURE = "on $warning-muted"
"""An added line holding tokens the model filled with low confidence, when its tokens
cannot be placed on the line drawn (a record without pieces, an escape sequence the
line drops cut between two tokens): the whole line is tinted."""
_ON_TINT = frozenset({f"italic {MUTED}", "bold $text-primary"})
"""The token styles kept on an added or removed line: the others are too close to the
tinted background in some themes, so those tokens take the text colour there."""


def render_diff(diff: str, max_lines: int, shading: DiffShading | None = None) -> Content:
    """The diff as styled content: code highlighted for its file's language, additions
    on the theme's muted success colour, removals on its muted error colour, hunk
    headers in its accent. With ``shading`` (the confidence view), each token of an
    added line is tinted by the confidence the model filled it with, as an answer's
    are, and the rows holding a token below the threshold are marked ``?`` (a marked
    row whose tokens cannot be placed on what is drawn is tinted whole)."""
    lines, left_out = cut_lines(clean(diff), max_lines, LINE_LIMIT)
    parts: list[Content | tuple[str, str] | str] = []
    code = _highlight_code(lines)
    unsure = frozenset(shading.unsure) if shading is not None else frozenset()
    raw = diff.split("\n") if shading is not None and shading.pieces else []
    old_no = new_no = 0
    for index, line in enumerate(lines):
        if line.startswith(("+++", "---")):
            parts.append((line + "\n", "bold"))
        elif index in code:
            mark = line[:1]
            number = old_no if mark == "-" else new_no
            old_no += mark != "+"
            new_no += mark != "-"
            flagged = mark == "+" and index in unsure
            if flagged:
                parts.append((f"{number:>{GUTTER}}", MUTED))
                parts.append(("?", "bold $text-warning"))
            else:
                parts.append((f"{number:>{GUTTER}} ", MUTED))
            body = code[index]
            if mark in _BACKGROUNDS:
                kept = [span for span in body.spans if span.style in _ON_TINT]
                body = Content(body.plain, kept)
                tokens = _token_tints(body.plain, raw, index, shading) if mark == "+" else None
                if tokens is not None:
                    body = body.add_spans(tokens)
                tint = _UNSURE if flagged and tokens is None else _BACKGROUNDS[mark]
                body = body.stylize_before(tint)
            parts.append((mark or " ", _MARKS.get(mark, "dim")))
            parts.append(body)
            parts.append("\n")
        else:
            if hunk := _HUNK.match(line):
                old_no, new_no = int(hunk.group(1)), int(hunk.group(2))
            parts.append((line + "\n", _MARKS.get(line[:1], "")))
    if left_out:
        parts.append((f"… {left_out:,} more diff lines not shown\n", "dim italic"))
    return Content.assemble(*parts).rstrip()


def _token_tints(
    shown: str, raw: list[str], row: int, shading: DiffShading | None
) -> list[Span] | None:
    """The tint of each token of added row ``row`` drawn as ``shown`` (its code after the
    ``+``, cleaned and maybe cut); None when its tokens are not known or the row drawn is
    not the row rated."""
    pieces = shading.pieces.get(row) if shading is not None else None
    if shading is None or pieces is None or row >= len(raw):
        return None
    shaded = shaded_content(raw[row][1:], pieces, below=shading.below)
    if cut_line("+" + shaded.plain, LINE_LIMIT)[1:] != shown:
        return None
    limit = min(len(shaded.plain), LINE_LIMIT - 1)  # the part of a long line drawn
    return [
        Span(span.start, min(span.end, limit), span.style)
        for span in shaded.spans
        if span.start < limit
    ]


def _token_style(kind: object) -> str:
    name = str(kind)
    for parent, style in _TOKENS:
        if name == parent or name.startswith(parent + "."):
            return style
    return ""


def _highlighted(source: str, path: str) -> list[Content]:
    """``source`` highlighted for the language ``path`` suggests, one content per line."""
    # Imported at the first diff shown: Rich's Syntax brings Pygments, which the app
    # does not need to start.
    from rich.syntax import Syntax

    lexer = Syntax(source, Syntax.guess_lexer(path or "x.txt")).lexer
    spans: list[Span] = []
    at = 0
    for kind, value in lexer.get_tokens(source) if lexer is not None else ():
        style = _token_style(kind)
        end = min(len(source), at + len(value))
        if style and value.strip() and end > at:
            spans.append(Span(at, end, style))
        at += len(value)
    return list(Content(source, spans).split("\n"))


def _highlight_code(lines: list[str]) -> dict[int, Content]:
    """Highlighted code of the context/added/removed lines, by line index; each file's
    lines are highlighted together with the lexer its name suggests."""
    result: dict[int, Content] = {}
    path = ""
    section: list[int] = []

    def flush() -> None:
        if not section:
            return
        source = "\n".join(lines[i][1:] for i in section)
        for index, text in zip(section, _highlighted(source, path), strict=False):
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
    """Shows one diff; ``expanded`` shows up to ``full_lines`` instead of ``short_lines``.
    With ``confidence`` (the edit's fill confidences), ``marked`` shades its added
    lines token by token."""

    DEFAULT_CSS = sibling_css(__file__)

    def __init__(
        self,
        diff: str,
        *,
        short_lines: int = 40,
        full_lines: int = 2000,
        classes: str = "",
        confidence: EditConfidence | None = None,
        marked: bool = False,
    ) -> None:
        self.diff = diff
        self.short_lines = short_lines
        self.full_lines = full_lines
        self.shading = DiffShading.of(diff, confidence) if confidence is not None else None
        """How the confidence view shades the diff (None: no confidences known)."""
        self.marked = marked
        self._expanded = False
        super().__init__(self._content(), classes=classes)

    def _content(self) -> Content:
        lines = self.full_lines if self._expanded else self.short_lines
        return render_diff(self.diff, lines, self.shading if self.marked else None)

    def toggle(self) -> None:
        """Switch between the short and the long view."""
        self._expanded = not self._expanded
        self.update(self._content())

    def mark(self, on: bool) -> None:
        """Show or hide the confidence shading."""
        if on != self.marked:
            self.marked = on
            self.update(self._content())
