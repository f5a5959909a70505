"""Turning ranked definitions into map text that fits a token budget.

The map lists files in path order; under each, the first line of every chosen
definition, with the lines of the definitions that enclose it (a method's
class) so the nesting reads right, and ``⋮`` where lines were left out::

    src/shop/cart.py:
    │class Cart:
    ⋮
    │    def total(self) -> Money:
    ⋮

The most definitions that fit are found by bisection: text only grows as
definitions are added, so the count that fits is a threshold.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from clover_code.repomap.rank import RankedDefinition
from clover_code.repomap.tags import Definition

__all__ = ["TokenCounter", "estimate_tokens", "fit_to_budget", "render_definitions"]

TokenCounter = Callable[[str], int]


def estimate_tokens(text: str) -> int:
    """A tokenizer-free estimate: about four characters per token."""
    return (len(text) + 3) // 4


def _enclosing(defs: Sequence[Definition], chosen: Definition) -> list[Definition]:
    """The definitions of the same file whose span holds ``chosen``."""
    return [d for d in defs if d[2] < chosen[2] and d[3] >= chosen[3]]


def render_definitions(
    ranked: Sequence[RankedDefinition], files: Sequence[str], all_defs: Sequence[list[Definition]]
) -> str:
    """The map text showing exactly the definitions in ``ranked``."""
    rows: dict[int, dict[int, str]] = {}
    for _score, index, definition in ranked:
        lines = rows.setdefault(index, {})
        lines[definition[2]] = definition[4]
        for outer in _enclosing(all_defs[index], definition):
            lines[outer[2]] = outer[4]
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


def fit_to_budget(
    ranked: Sequence[RankedDefinition],
    files: Sequence[str],
    all_defs: Sequence[list[Definition]],
    budget_tokens: int,
    count_tokens: TokenCounter = estimate_tokens,
) -> str:
    """The map of the best-ranked definitions whose text fits ``budget_tokens``."""
    if budget_tokens <= 0 or not ranked:
        return ""
    # Each definition costs at least one line, so more than the budget never fits.
    low, high = 0, min(len(ranked), budget_tokens)
    best = ""
    while low < high:
        middle = (low + high + 1) // 2
        text = render_definitions(ranked[:middle], files, all_defs)
        if count_tokens(text) <= budget_tokens:
            low, best = middle, text
        else:
            high = middle - 1
    return best
