"""Which definitions matter most: personalised PageRank over the reference graph.

PageRank (personalised toward the files the session mentioned or edited, when
there are any: they receive most of the teleports, the rest are spread evenly
so code far from the focus still has an order) gives each file a rank; each
file then hands its rank to the definitions it uses, in proportion to its
edge weights. Definitions nobody uses keep a small share of their own file's
rank, so they still order by where they live.

The graph comes as flat arrays (``Edges``, laid out by ``graph.RefGraph``):
rank flows from a file through the names it uses to the files defining them,
which is the same sum as over file-to-file edges, in numpy. Every sum is
taken in an order the arrays fix, so the same graph ranks bit for bit the
same however it was put together. numpy is imported with this module, which
the map loads only when it has something to rank.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import overload

import numpy as np
import numpy.typing as npt

from clover_code.repomap.tags import Definition, FileTags

__all__ = [
    "Edges",
    "Floats",
    "Ints",
    "RankedDefinition",
    "RankedDefinitions",
    "best",
    "name_flow",
    "pagerank",
    "teleports",
]

FOCUS_SHARE = 0.8
"""Share of PageRank's teleports that go to the focus files, when there are any."""
UNUSED_SHARE = 1e-3
"""Share of its file's rank a definition gets of its own (what one nobody uses keeps)."""
_DAMPING = 0.85
_TOLERANCE = 1e-3
"""PageRank stops when ranks move less than this in total (L1): on a Django
sized graph 1e-3 already leaves the top hundred files in place."""
_MAX_ITERATIONS = 100

RankedDefinition = tuple[float, int, Definition]
"""(score, file index, definition)."""

Floats = npt.NDArray[np.float64]
Ints = npt.NDArray[np.intp]


@dataclass(slots=True)
class Edges:
    """The edges of a file list in flat arrays, ready to rank.

    Only names that make edges (used, defined in 1 to ``MAX_DEFINERS`` files)
    take part, numbered 0.. in ``names``; every other name would only add zeros.
    """

    names: Ints
    """The name id of each name taking part."""
    weight: Floats
    """Per name taking part: its weight."""
    use_file: Ints
    use_name: Ints
    use_strength: Floats
    """Every (file, name, strength) use of a name taking part."""
    def_file: Ints
    def_name: Ints
    """Every (file, name) of a file defining a name taking part."""
    inverse_out: Floats
    """Per file: 1 / its total edge weight (0 for a file without edges)."""
    dangling: Ints
    """Files without edges: their rank teleports."""


class RankedDefinitions(Sequence[RankedDefinition]):
    """Ranked definitions, made into tuples only as they are read (a fit reads a few hundred)."""

    def __init__(
        self, scores: list[float], files: list[int], positions: list[int], tags: list[FileTags]
    ) -> None:
        self._scores = scores
        self._files = files
        self._positions = positions
        self._tags = tags

    def __len__(self) -> int:
        return len(self._scores)

    @overload
    def __getitem__(self, index: int) -> RankedDefinition: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[RankedDefinition]: ...

    def __getitem__(self, index: int | slice) -> RankedDefinition | Sequence[RankedDefinition]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        file = self._files[index]
        return (self._scores[index], file, self._tags[file].defs[self._positions[index]])


def teleports(count: int, focus: Collection[int]) -> Floats:
    """Where PageRank teleports among ``count`` files: mostly to ``focus`` when there is one."""
    if not focus:
        return np.full(count, 1.0 / count)
    # Most teleports land on the focus; the rest keep the whole repo ranked.
    personal = np.full(count, (1.0 - FOCUS_SHARE) / count)
    personal[sorted(focus)] += FOCUS_SHARE / len(focus)
    return personal


def name_flow(arrays: Edges, rank: Floats) -> Floats:
    """Per name taking part: the rank its users send through it.

    That is the name's weight times the sum, over its uses, of the user's rank per
    unit of its edge weight times the strength of the use.
    """
    per_weight = rank * arrays.inverse_out
    sent = np.bincount(
        arrays.use_name,
        weights=per_weight[arrays.use_file] * arrays.use_strength,
        minlength=len(arrays.names),
    )
    flow: Floats = arrays.weight * sent
    return flow


def pagerank(arrays: Edges, personal: Floats) -> Floats:
    """Ranks of the files (summing to 1), teleporting by ``personal``.

    Files without edges teleport by ``personal`` too. ``np.bincount`` adds in
    the order of its input, and numpy sums an array pairwise in an order set
    by its length alone, so the result depends on the graph alone.
    """
    rank = personal
    n = len(personal)
    for _ in range(_MAX_ITERATIONS):
        inflow = np.bincount(
            arrays.def_file, weights=name_flow(arrays, rank)[arrays.def_name], minlength=n
        )
        spread = _DAMPING * float(rank[arrays.dangling].sum()) + (1.0 - _DAMPING)
        new: Floats = spread * personal + _DAMPING * inflow
        delta = float(np.abs(new - rank).sum())
        rank = new
        if delta < _TOLERANCE:
            break
    return rank


def best(keys: Floats, limit: int | None) -> Ints:
    """Indices of the ``limit`` smallest ``keys``, smallest first, ties by index."""
    if limit is None or limit >= len(keys):
        return np.argsort(keys, kind="stable")
    if limit <= 0:
        return np.zeros(0, dtype=np.intp)
    bound = np.partition(keys, limit - 1)[limit - 1]
    candidates = np.flatnonzero(keys <= bound)
    order: Ints = candidates[np.argsort(keys[candidates], kind="stable")][:limit]
    return order
