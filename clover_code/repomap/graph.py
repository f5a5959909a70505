"""The reference graph of a workspace's files, kept up to date file by file.

Files are the nodes. A file that uses a name another file defines gets an
edge to it, weighted by how often it uses the name (square root, so one
chatty file cannot dominate) and by how telling the name is: long
``snake_case``/``camelCase`` names count more, private (``_x``) names and
names defined in many files count less, and names defined in very many files
(``get``, ``__init__``) are left out, as they say nothing about structure.
Names link only within a language family (Python to Python, JavaScript to
TypeScript, C to C++), so a Python ``append`` never points at a JavaScript one.

After an edit only the edited files are redone: a file's part (the names it
defines, the names it uses and how often) depends on its own tags alone, and
is kept in arrays laid end to end in file order, where an edited file's part
is spliced in. A name's weight depends on how many files define it, which is
counted afresh for each ranking. Nothing depends on the order updates came
in, so an updated graph ranks bit for bit like one built from scratch.
"""

from __future__ import annotations

import itertools
import operator
from collections.abc import Collection, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from clover_code.repomap.languages import link_group
from clover_code.repomap.rank import (
    UNUSED_SHARE,
    Edges,
    Floats,
    Ints,
    RankedDefinition,
    RankedDefinitions,
    best,
    name_flow,
    pagerank,
    teleports,
)
from clover_code.repomap.tags import FileTags

__all__ = ["RefGraph"]

MAX_DEFINERS = 30
"""Names defined in more files than this do not make edges."""
_RANKS_KEPT = 8
"""PageRanks (one per focus) kept while the graph stays the same."""


def _name_factor(name: str) -> float:
    """The part of a name's weight that depends on the name alone."""
    weight = 1.0
    if len(name) >= 8 and ("_" in name.strip("_") or name.lower() != name != name.upper()):
        weight *= 10.0
    if name.startswith("_"):
        weight *= 0.1
    return weight


@dataclass(slots=True)
class _FilePart:
    """One file's share of the graph; name ids index ``RefGraph``'s name table."""

    tags: FileTags
    def_names: Ints
    """The name id of each of ``tags.defs``."""
    defined: Ints
    """Ids of the distinct names the file defines, in order of first definition."""
    used: Ints
    """Ids of the names the file references (in ``tags.refs`` order)."""
    strength: Floats
    """Square root of how often it references each of ``used``."""


@dataclass(slots=True)
class _Column:
    """One ``_FilePart`` array of every file, end to end in file order."""

    values: npt.NDArray[np.generic]
    lengths: Ints
    starts: Ints
    _owners: Ints | None = None

    @classmethod
    def of(cls, pieces: Sequence[npt.NDArray[np.generic]], dtype: type[np.generic]) -> _Column:
        lengths = np.array([len(p) for p in pieces], dtype=np.intp)
        values = np.concatenate(pieces) if pieces else np.zeros(0, dtype=dtype)
        return cls(values, lengths, _starts(lengths))

    def splice(self, changed: dict[int, npt.NDArray[np.generic]]) -> None:
        """Put ``changed`` (file index -> its new array) in place of those files' arrays."""
        pieces: list[npt.NDArray[np.generic]] = []
        done = 0
        resized = False
        for index in sorted(changed):
            pieces += [self.values[done : self.starts[index]], changed[index]]
            done = int(self.starts[index] + self.lengths[index])
            if self.lengths[index] != len(changed[index]):
                self.lengths[index] = len(changed[index])
                resized = True
        pieces.append(self.values[done:])
        self.values = np.concatenate(pieces)
        if resized:
            self.starts = _starts(self.lengths)
            self._owners = None

    def owners(self) -> Ints:
        """The file index of each value (kept while no file's length changes)."""
        if self._owners is None:
            files = np.arange(len(self.lengths), dtype=np.intp)
            self._owners = np.repeat(files, self.lengths)
        return self._owners


def _starts(lengths: Ints) -> Ints:
    starts: Ints = np.zeros(len(lengths) + 1, dtype=np.intp)
    np.cumsum(lengths, out=starts[1:])
    return starts


class RefGraph:
    """The reference graph of a set of files, updated file by file, ready to rank for any focus."""

    def __init__(self) -> None:
        self.files: list[str] = []
        self.tags: list[FileTags] = []
        self._parts: dict[str, _FilePart] = {}
        self._ids: dict[tuple[str, str], int] = {}
        """(language group, name) -> name id; an id stays while the graph lives."""
        self._factors: list[float] = []
        self._factor_array: Floats = np.zeros(0)
        self._columns: dict[str, _Column] = {}
        """Empty when the file list changed: they are laid out again."""
        self._edges: Edges | None = None
        self._ranks: dict[tuple[int, ...], Floats] = {}
        """PageRank by focus, while the graph stays the same."""

    @classmethod
    def build(cls, files: list[str], tags: list[FileTags]) -> RefGraph:
        """The graph of ``files`` (their ``tags`` at the same indices)."""
        graph = cls()
        graph.update(files, tags)
        return graph

    def update(self, files: list[str], tags: list[FileTags]) -> None:
        """Make this the graph of ``files``, redoing only files whose tags are new objects."""
        parts = self._parts
        if files != self.files:
            for rel in parts.keys() - set(files):
                del parts[rel]
            for rel, file_tags in zip(files, tags, strict=True):
                part = parts.get(rel)
                if part is None or part.tags is not file_tags:
                    parts[rel] = self._part(file_tags)
            self._columns = {}
            self._edges = None
            self._ranks = {}
        else:
            news = itertools.compress(range(len(tags)), map(operator.is_not, tags, self.tags))
            changed = {i: self._part(tags[i]) for i in news}
            if not changed:
                return
            if not all(_same_edges(parts[files[i]], part) for i, part in changed.items()):
                self._edges = None
                self._ranks = {}
            for i, part in changed.items():
                parts[files[i]] = part
            for name, column in self._columns.items():
                column.splice({i: getattr(part, name) for i, part in changed.items()})
        self.files = list(files)
        self.tags = list(tags)

    def _id(self, group: str, name: str) -> int:
        key = (group, name)
        found = self._ids.get(key)
        if found is None:
            found = self._ids[key] = len(self._factors)
            self._factors.append(_name_factor(name))
        return found

    def _part(self, file_tags: FileTags) -> _FilePart:
        group = link_group(file_tags.lang)
        name_id = self._id
        def_names = [name_id(group, d[0]) for d in file_tags.defs]
        refs = file_tags.refs
        return _FilePart(
            file_tags,
            np.array(def_names, dtype=np.intp),
            np.array(list(dict.fromkeys(def_names)), dtype=np.intp),
            np.array([name_id(group, name) for name in refs], dtype=np.intp),
            np.sqrt(np.array(list(refs.values()), dtype=np.float64)),
        )

    def _column(self, name: str) -> _Column:
        column = self._columns.get(name)
        if column is None:
            parts = [self._parts[rel] for rel in self.files]
            dtype = np.float64 if name == "strength" else np.intp
            column = self._columns[name] = _Column.of([getattr(p, name) for p in parts], dtype)
        return column

    def _assemble(self) -> Edges:
        if self._edges is not None:
            return self._edges
        n = len(self.files)
        ids = len(self._factors)
        if len(self._factor_array) != ids:
            self._factor_array = np.array(self._factors, dtype=np.float64)
        defined_column = self._column("defined")
        defined = defined_column.values
        definers = np.bincount(defined, minlength=ids)
        weight = self._factor_array * np.where(definers > 5, 0.1, 1.0)
        weight[(definers == 0) | (definers > MAX_DEFINERS)] = 0.0
        used = self._column("used")
        use_name = used.values
        linked = weight[use_name] > 0.0
        use_name = use_name[linked]
        use_file = used.owners()[linked]
        use_strength = self._column("strength").values[linked]
        out = np.bincount(
            use_file,
            weights=weight[use_name] * use_strength * definers[use_name],
            minlength=n,
        )
        names = np.flatnonzero(np.bincount(use_name, minlength=ids))
        slot = np.full(ids, -1, dtype=np.intp)
        slot[names] = np.arange(len(names), dtype=np.intp)
        def_slot = slot[defined]
        taking_part = def_slot >= 0
        inverse_out = np.zeros(n)
        np.divide(1.0, out, out=inverse_out, where=out > 0.0)
        self._edges = Edges(
            names=names,
            weight=weight[names],
            use_file=use_file,
            use_name=slot[use_name],
            use_strength=use_strength,
            def_file=defined_column.owners()[taking_part],
            def_name=def_slot[taking_part],
            inverse_out=inverse_out,
            dangling=np.flatnonzero(out == 0.0),
        )
        return self._edges

    def rank_files(self, focus: Collection[int]) -> Floats:
        """PageRank of every file, personalised toward ``focus`` when it is not empty."""
        key = tuple(sorted(focus))
        cached = self._ranks.get(key)
        if cached is not None:
            return cached
        if not self.files:
            return np.zeros(0)
        if len(self._ranks) >= _RANKS_KEPT:
            self._ranks.clear()
        rank = self._ranks[key] = pagerank(self._assemble(), teleports(len(self.files), key))
        return rank

    def rank_definitions(
        self, focus: Collection[int] = (), idents: Collection[str] = (), limit: int | None = None
    ) -> Sequence[RankedDefinition]:
        """The ``limit`` best definitions (default: all), best first.

        Those named in ``idents`` (mentioned by the session) come first; ties
        go by file order, then line.
        """
        def_names = self._column("def_names")
        def_files = def_names.owners()
        rank = self.rank_files(focus)
        arrays = self._assemble()
        flow = np.zeros(len(self._factors))
        flow[arrays.names] = name_flow(arrays, rank)
        scores = flow[def_names.values]
        scores += rank[def_files] * UNUSED_SHARE
        if idents:
            groups = {link_group(t.lang) for t in self.tags}
            wanted = [
                found
                for group in groups
                for name in idents
                if (found := self._ids.get((group, name))) is not None
            ]
            # Above any score a rank can give.
            scores[np.isin(def_names.values, wanted)] += 1e3
        order = best(-scores, limit)
        return RankedDefinitions(
            scores[order].tolist(),
            def_files[order].tolist(),
            (order - def_names.starts[def_files[order]]).tolist(),
            self.tags,
        )


def _same_edges(a: _FilePart, b: _FilePart) -> bool:
    """Whether two versions of a file make the same edges (so the same PageRank)."""
    return (
        np.array_equal(a.defined, b.defined)
        and np.array_equal(a.used, b.used)
        and np.array_equal(a.strength, b.strength)
    )
