"""Which definitions matter most: a reference graph ranked with personalised PageRank.

Files are the nodes. A file that uses a name another file defines gets an
edge to it, weighted by how often it uses the name (square root, so one
chatty file cannot dominate) and by how telling the name is: long
``snake_case``/``camelCase`` names count more, private (``_x``) names and
names defined in many files count less, and names defined in very many files
(``get``, ``__init__``) are left out, as they say nothing about structure.
Names link only within a language family (Python to Python, JavaScript to
TypeScript, C to C++), so a Python ``append`` never points at a JavaScript one.

PageRank (personalised toward the files the session mentioned or edited, when
there are any: they receive most of the teleports, the rest are spread evenly
so code far from the focus still has an order) gives each file a rank; each
file then hands its rank to the definitions it uses, in proportion to its
edge weights. Definitions nobody uses keep a small share of their own file's
rank, so they still order by where they live.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from operator import mul

from clover_code.repomap.languages import link_group
from clover_code.repomap.tags import Definition, FileTags

__all__ = ["RankedDefinition", "RefGraph", "pagerank"]

MAX_DEFINERS = 30
"""Names defined in more files than this do not make edges."""
FOCUS_SHARE = 0.8
"""Share of PageRank's teleports that go to the focus files, when there are any."""
_DAMPING = 0.85
_UNUSED_SHARE = 1e-3

RankedDefinition = tuple[float, int, Definition]
"""(score, file index, definition)."""


def _name_weight(name: str, definers: int) -> float:
    weight = 1.0
    if len(name) >= 8 and ("_" in name.strip("_") or name.lower() != name != name.upper()):
        weight *= 10.0
    if name.startswith("_"):
        weight *= 0.1
    if definers > 5:
        weight *= 0.1
    return weight


def pagerank(
    incoming: Sequence[tuple[list[int], list[float]]],
    dangling: Sequence[int],
    personal: Sequence[float],
    *,
    tolerance: float = 1e-3,
    max_iterations: int = 100,
) -> list[float]:
    """Ranks of a graph given, per node, its sources and their transition probabilities.

    ``personal`` is the teleport distribution (sums to 1); dangling nodes
    (no outgoing edges) teleport by it too. The ranks sum to 1. Iteration
    stops when ranks move less than ``tolerance`` in total (L1): on a Django
    sized graph 1e-3 already leaves the top hundred files in place.
    """
    n = len(incoming)
    if n == 0:
        return []
    rank = list(personal)
    teleport = 1.0 - _DAMPING
    # Nodes nobody points to get only teleports: skip their (empty) sums.
    pointed = [(i, srcs, probs) for i, (srcs, probs) in enumerate(incoming) if srcs]
    for _ in range(max_iterations):
        get = rank.__getitem__
        spread = _DAMPING * sum(map(get, dangling)) + teleport
        new = [spread * p for p in personal]
        for i, srcs, probs in pointed:
            new[i] += _DAMPING * sum(map(mul, map(get, srcs), probs))
        delta = sum(abs(a - b) for a, b in zip(new, rank, strict=True))
        rank = new
        if delta < tolerance:
            break
    return rank


@dataclass(slots=True)
class RefGraph:
    """The reference graph of a set of files, ready to rank for any focus."""

    files: list[str]
    tags: list[FileTags]
    definers: dict[str, dict[str, list[int]]]
    """language group -> name -> files defining it."""
    users: dict[str, dict[str, tuple[list[int], list[float], float]]]
    """language group -> name -> (files using it, sqrt(uses) of each, weight of the name)."""
    incoming: list[tuple[list[int], list[float]]]
    out_weight: list[float]
    dangling: list[int]

    @classmethod
    def build(cls, files: list[str], tags: list[FileTags]) -> RefGraph:
        """The graph of ``files`` (their ``tags`` at the same indices)."""
        groups = [link_group(t.lang) for t in tags]
        definers: dict[str, dict[str, list[int]]] = {}
        for index, file_tags in enumerate(tags):
            group_definers = definers.setdefault(groups[index], {})
            for name in {d[0] for d in file_tags.defs}:
                group_definers.setdefault(name, []).append(index)
        users: dict[str, dict[str, tuple[list[int], list[float], float]]] = {}
        edges: list[dict[int, float]] = [{} for _ in files]
        sqrt = math.sqrt
        for src, file_tags in enumerate(tags):
            known = definers.get(groups[src])
            if not known:
                continue
            group_users = users.setdefault(groups[src], {})
            out = edges[src]
            refs = file_tags.refs
            # The set intersection runs in C: most references (builtins,
            # library calls) name nothing defined here.
            for name in refs.keys() & known.keys():
                targets = known[name]
                if len(targets) > MAX_DEFINERS:
                    continue
                entry = group_users.get(name)
                if entry is None:
                    entry = group_users[name] = ([], [], _name_weight(name, len(targets)))
                strength = sqrt(refs[name])
                entry[0].append(src)
                entry[1].append(strength)
                weight = entry[2] * strength
                for dst in targets:
                    out[dst] = out.get(dst, 0.0) + weight
        out_weight = [sum(out.values()) for out in edges]
        incoming: list[tuple[list[int], list[float]]] = [([], []) for _ in files]
        for src, out in enumerate(edges):
            total = out_weight[src]
            for dst, weight in out.items():
                incoming[dst][0].append(src)
                incoming[dst][1].append(weight / total)
        dangling = [i for i, total in enumerate(out_weight) if total == 0.0]
        return cls(files, tags, definers, users, incoming, out_weight, dangling)

    def rank_files(self, focus: Collection[int]) -> list[float]:
        """PageRank of every file, personalised toward ``focus`` when it is not empty."""
        n = len(self.files)
        if not n:
            return []
        if not focus:
            return pagerank(self.incoming, self.dangling, [1.0 / n] * n)
        # Most teleports land on the focus; the rest keep the whole repo ranked.
        base = (1.0 - FOCUS_SHARE) / n
        extra = FOCUS_SHARE / len(focus)
        personal = [base + extra if i in focus else base for i in range(n)]
        return pagerank(self.incoming, self.dangling, personal)

    def rank_definitions(
        self, focus: Collection[int] = (), idents: Collection[str] = (), limit: int | None = None
    ) -> list[RankedDefinition]:
        """The ``limit`` best definitions (default: all), best first.

        Those named in ``idents`` (mentioned by the session) come first; ties
        go by file order, then line.
        """
        rank = self.rank_files(focus)
        per_weight = [r / w if w else 0.0 for r, w in zip(rank, self.out_weight, strict=True)]
        get = per_weight.__getitem__
        groups: dict[str, dict[str, float]] = {}
        for group, group_users in self.users.items():
            groups[group] = {
                name: weight * sum(map(mul, map(get, srcs), strengths))
                for name, (srcs, strengths, weight) in group_users.items()
            }
        ranked: list[tuple[float, int, int, Definition]] = []
        for index, file_tags in enumerate(self.tags):
            own = rank[index] * _UNUSED_SHARE
            scores = groups.get(link_group(file_tags.lang), {})
            for definition in file_tags.defs:
                name = definition[0]
                score = scores.get(name, 0.0) + own
                if name in idents:
                    score += 1e3  # above any score a rank can give
                ranked.append((-score, index, definition[2], definition))
        best = ranked if limit is None else heapq.nsmallest(limit, ranked)
        if limit is None:
            best.sort()
        return [(-score, index, definition) for score, index, _, definition in best]
