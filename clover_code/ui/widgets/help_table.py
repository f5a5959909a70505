"""/help: the commands and the keys, each a two-column table whose right column
wraps under itself (never back to the left edge) on a narrow terminal."""

from __future__ import annotations

from collections.abc import Sequence

from rich.console import Group
from rich.table import Table
from rich.text import Text

from clover_code.ui.widgets.notice_line import NoticeLine

Section = tuple[str, Sequence[tuple[str, str]]]
"""A title and its rows: (what to type or press, what it does)."""


class HelpTable(NoticeLine):
    """A note drawn as titled two-column tables; ``text`` holds the same, plain."""

    def __init__(self, sections: Sequence[Section]) -> None:
        plain = "\n".join(
            "\n".join([title, *(f"  {left} {right}" for left, right in rows)])
            for title, rows in sections
        )
        super().__init__(plain)
        parts: list[Table | Text] = []
        for n, (title, rows) in enumerate(sections):
            parts.append(Text(("\n" if n else "") + title, style="bold"))
            table = Table.grid(padding=(0, 2), pad_edge=False)
            table.add_column(no_wrap=True, style="bold")
            table.add_column(overflow="fold")
            for left, right in rows:
                table.add_row(Text(left), Text(right))  # no markup: [ID] is text
            parts.append(table)
        self.update(Group(*parts))
