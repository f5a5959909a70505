"""Turning ranked definitions into map text that fits a token budget.

The map lists files in path order; under each, the first line of every chosen
definition, with the lines of the definitions that enclose it (a method's
class) so the nesting reads right, and ``⋮`` where lines were left out::

    src/shop/cart.py:
    │class Cart:
    ⋮
    │    def total(self) -> Money:
    ⋮

The most definitions that fit are found by search: text only grows as
definitions are added (a line added either fills a ``⋮`` or adds one), so
the count that fits is a threshold, and a search started anywhere finds the
same one. A rebuild starts from the last map's count, which an edit rarely
moves by much.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from clover_code.repomap.tags import Definition

if TYPE_CHECKING:
    # Only the type: the ranking module loads numpy, which a map read from the cache never needs.
    from clover_code.repomap.rank import RankedDefinition

__all__ = ["RowCache", "TokenCounter", "estimate_tokens", "fit_to_budget", "render_definitions"]

TokenCounter = Callable[[str], int]


def estimate_tokens(text: str) -> int:
    """A tokenizer-free estimate: about four characters per token."""
    return (len(text) + 3) // 4


def _enclosing(defs: Sequence[Definition], chosen: Definition) -> list[Definition]:
    """The definitions of the same file whose span holds ``chosen``."""
    return [d for d in defs if d[2] < chosen[2] and d[3] >= chosen[3]]


_Rows = list[tuple[int, str]]
"""The (line, text) rows one definition brings into the map: its own and its enclosers'."""


def _rows(defs: Sequence[Definition], definition: Definition) -> _Rows:
    return [(d[2], d[4]) for d in _enclosing(defs, definition)] + [(definition[2], definition[4])]


class RowCache:
    """The rows of the definitions a map showed, per file, kept while its definitions stay.

    Finding a definition's enclosers reads the whole file's definitions;
    between builds only the edited files' change.
    """

    def __init__(self) -> None:
        self._files: dict[str, tuple[list[Definition], dict[Definition, _Rows]]] = {}

    def rows(self, path: str, defs: list[Definition], definition: Definition) -> _Rows:
        """The rows ``definition`` (one of ``defs``, the definitions of ``path``) brings."""
        known = self._files.get(path)
        if known is None or known[0] is not defs:
            known = self._files[path] = (defs, {})
        found = known[1].get(definition)
        if found is None:
            found = known[1][definition] = _rows(defs, definition)
        return found

    def clear(self) -> None:
        """Forget every file (when files came or went, so no path's rows pile up)."""
        self._files.clear()


def _render_rows(chosen: Sequence[tuple[int, _Rows]], files: Sequence[str]) -> str:
    rows: dict[int, dict[int, str]] = {}
    for index, def_rows in chosen:
        lines = rows.setdefault(index, {})
        lines.update(def_rows)
    out: list[str] = []
    for index in sorted(rows, key=files.__getitem__):
        out.append(f"{files[index]}:")
        previous = -1
        for row, text in sorted(rows[index].items()):
            if row != previous + 1:
                out.append("⋮")
            out.append(f"│{text}")
            previous = row
        out.append("⋮")
    return "\n".join(out) + "\n" if out else ""


def render_definitions(
    ranked: Sequence[RankedDefinition], files: Sequence[str], all_defs: Sequence[list[Definition]]
) -> str:
    """The map text showing exactly the definitions in ``ranked``."""
    return _render_rows([(i, _rows(all_defs[i], d)) for _s, i, d in ranked], files)


def fit_to_budget(
    ranked: Sequence[RankedDefinition],
    files: Sequence[str],
    all_defs: Sequence[list[Definition]],
    budget_tokens: int,
    count_tokens: TokenCounter = estimate_tokens,
    *,
    start: int = 0,
    cache: RowCache | None = None,
) -> tuple[str, int]:
    """The map of the best-ranked definitions whose text fits ``budget_tokens``, and their count.

    ``start`` is a guess at the count (the last map's): the search begins
    there, and finds the same count from any guess. ``cache`` keeps rows
    between calls.
    """
    if budget_tokens <= 0 or not ranked:
        return "", 0
    chosen: list[tuple[int, _Rows]] = []
    rows = (cache or RowCache()).rows

    def text_of(count: int) -> str:
        while len(chosen) < count:
            _score, index, definition = ranked[len(chosen)]
            chosen.append((index, rows(files[index], all_defs[index], definition)))
        return _render_rows(chosen[:count], files)

    texts: dict[int, str] = {0: ""}

    def fits(count: int) -> bool:
        text = text_of(count)
        if count_tokens(text) <= budget_tokens:
            texts[count] = text
            return True
        return False

    # The count is in [low, high] and ``low`` is known to fit. Each definition
    # costs at least one line, so more than the budget never fits.
    low, high = 0, min(len(ranked), budget_tokens)
    if 0 < start <= high:
        # Gallop from the guess, in growing steps, until the count is bracketed.
        step = 1
        if fits(start):
            low = start
            while low < high:
                probe = min(low + step, high)
                if not fits(probe):
                    high = probe - 1
                    break
                low, step = probe, step * 2
        else:
            high = start - 1
            while low < high:
                probe = max(high - step + 1, low + 1)
                if fits(probe):
                    low = probe
                    break
                high, step = probe - 1, step * 2
    while low < high:
        middle = (low + high + 1) // 2
        if fits(middle):
            low = middle
        else:
            high = middle - 1
    return texts[low], low
