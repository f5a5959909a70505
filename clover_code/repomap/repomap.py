"""``RepoMap``: the ranked outline of a workspace that the model sees.

One instance serves one workspace for a session. Each build rescans
(directory listings are reused when unchanged), stats the source files and
then does only the work their changes need: nothing but a lookup when no file
changed (in memory, or in the disk cache for a new session), parsing of just
the changed files otherwise. Builds are serialised by a lock, so the tool
may run them in a worker thread.
"""

from __future__ import annotations

import hashlib
import itertools
import marshal
import operator
import os
import threading
from array import array
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from clover_code.repomap.cache import CacheChanges, TagCache
from clover_code.repomap.languages import fingerprint
from clover_code.repomap.notes import collect as collect_notes
from clover_code.repomap.parse import NO_GRAMMAR, FileParser, parse_many
from clover_code.repomap.render import RowCache, TokenCounter, estimate_tokens, fit_to_budget
from clover_code.repomap.scan import SourceScanner
from clover_code.repomap.tags import FileTags

if TYPE_CHECKING:
    from clover_code.repomap.graph import RefGraph

__all__ = ["DEFAULT_MAX_FILES", "DEFAULT_MAX_FILE_BYTES", "RepoMap", "RepoMapResult"]

DEFAULT_MAX_FILES = 10_000
"""Most source files one map covers; the shallowest are kept."""
DEFAULT_MAX_FILE_BYTES = 1 << 20
"""Files larger than this are not parsed (generated or vendored, as a rule)."""


@dataclass(slots=True)
class RepoMapResult:
    """A built map: its text, notes on what was left out, and what the build cost."""

    text: str
    notes: list[str]
    files: int
    """Source files the map covers."""
    parsed: int = 0
    """Files parsed by this build (0 when everything came from a cache)."""
    from_cache: bool = False
    """Whether the text itself was reused (nothing changed since it was made)."""


Stamp = tuple[int, int]
"""A file's (mtime in ns, size): when it changes, the file is parsed again."""


@dataclass(slots=True)
class _State:
    tags: dict[str, FileTags] = field(default_factory=dict)
    stamps: dict[str, Stamp] = field(default_factory=dict)
    """The stamp of each file when its ``tags`` were taken."""
    loaded: bool = False
    graph: RefGraph | None = None
    fitted: int = 0
    """Definitions the last map showed: where the next fit starts looking."""
    rows: RowCache = field(default_factory=RowCache)
    last_stats: dict[str, Stamp] = field(default_factory=dict)
    last_options: tuple[object, ...] = ()
    last_result: RepoMapResult | None = None


class RepoMap:
    """The repo map of the workspace at ``root``, cached in ``cache_path`` (SQLite) if given.

    ``count_tokens`` measures map text against the budget (default: an
    estimate of four characters per token; pass the model's tokenizer for
    exact budgets). ``workers`` caps the processes a cold build parses with
    (default: one per CPU, at most 8; 1 parses in this process).
    """

    def __init__(
        self,
        root: Path,
        cache_path: Path | None = None,
        *,
        max_files: int = DEFAULT_MAX_FILES,
        max_file_bytes: int = DEFAULT_MAX_FILE_BYTES,
        count_tokens: TokenCounter = estimate_tokens,
        workers: int | None = None,
    ) -> None:
        self.root = Path(os.path.realpath(root))
        self.max_files = max_files
        self.max_file_bytes = max_file_bytes
        self.count_tokens = count_tokens
        self.workers = workers if workers is not None else min(os.cpu_count() or 1, 8)
        self.notes: list[str] = []
        """Notes of the last build: languages and files skipped, and why."""
        self._cache = TagCache(cache_path, str(self.root), fingerprint())
        self._scanner = SourceScanner(self.root)
        self._parser = FileParser(str(self.root), max_file_bytes)
        self._state = _State()
        self._lock = threading.Lock()
        self._scanner.load(self._cache.listings())

    def reset(self) -> None:
        """Keep the parsed tags but nothing built from them: the next build ranks
        and fits from scratch, like the first of a session whose tags are all cached."""
        with self._lock:
            old = self._state
            self._state = _State(tags=old.tags, stamps=old.stamps, loaded=old.loaded)

    def close(self) -> None:
        """Release the cache file."""
        with self._lock:
            self._cache.close()

    def render(
        self, budget_tokens: int, *, mentioned: Iterable[str] = (), edited: Iterable[str] = ()
    ) -> str:
        """The map text within ``budget_tokens`` ("" for a repository with nothing to map).

        ``mentioned`` and ``edited`` are paths (relative to the root, or
        absolute inside it) the ranking leans toward; a mentioned word that
        is not a file is taken as an identifier, whose definitions count more.
        Notes on what was skipped are left in ``notes``.
        """
        return self.build(budget_tokens, mentioned=mentioned, edited=edited).text

    def build(
        self, budget_tokens: int, *, mentioned: Iterable[str] = (), edited: Iterable[str] = ()
    ) -> RepoMapResult:
        """Like ``render``, returning the notes and the build's cost as well."""
        with self._lock:
            result = self._build(budget_tokens, list(mentioned), list(edited))
        self.notes = result.notes
        return result

    def _build(self, budget: int, mentioned: list[str], edited: list[str]) -> RepoMapResult:
        scan = self._scanner.scan(self.max_files)
        stats = _stamps(f"{self.root}/", scan.files)
        files = list(stats)
        focus = sorted({p for p in map(self._relative, [*mentioned, *edited]) if p in stats})
        idents = sorted({w for w in mentioned if w.isidentifier() and w not in stats})
        options = (budget, *focus, "\0", *idents, _counter_name(self))
        state = self._state
        last = state.last_result
        if last is not None and options == state.last_options and stats == state.last_stats:
            return _reused(last)
        key = _digest([_stats_digest(stats), *map(str, options)])
        if not state.loaded:
            stored = self._cache.get_map(key)
            if isinstance(stored, tuple) and len(stored) == 3:
                text, notes, count = stored
                result = RepoMapResult(text, list(notes), count, from_cache=True)
                state.last_stats, state.last_options, state.last_result = stats, options, result
                return result
        changes = CacheChanges()
        parsed = self._refresh(stats, changes)
        tags = list(map(state.tags.__getitem__, files))
        if state.graph is None:
            # Imported here: the ranking loads numpy, which a map read from the cache never needs.
            from clover_code.repomap.graph import RefGraph

            state.graph = RefGraph()
        graph = state.graph
        if files != graph.files:
            state.rows.clear()
        graph.update(files, tags)
        index = {rel: i for i, rel in enumerate(files)} if focus else {}
        # A definition costs at least one line of map: more than the budget never fits.
        ranked = graph.rank_definitions({index[f] for f in focus}, set(idents), limit=budget)
        all_defs = [t.defs for t in tags]
        text, state.fitted = fit_to_budget(
            ranked, files, all_defs, budget, self.count_tokens, start=state.fitted, cache=state.rows
        )
        notes = collect_notes(
            files,
            tags,
            self._parser.grammar,
            scan.capped,
            self.max_files,
            self.max_file_bytes,
        )
        if self._cache.error:
            notes.append(self._cache.error)
        result = RepoMapResult(text, notes, len(files), parsed)
        if self._scanner.changed():
            changes.listings = self._scanner.export()
        changes.map_key, changes.map_value = key, (text, notes, len(files))
        self._cache.store(changes)
        state.last_stats, state.last_options, state.last_result = stats, options, result
        return result

    def _refresh(self, stats: dict[str, Stamp], changes: CacheChanges) -> int:
        """Bring the tags up to date with ``stats``; returns how many files were parsed."""
        state = self._state
        if not state.loaded:
            state.loaded = True
            for rel, (mtime, size, blob) in self._cache.files().items():
                if stats.get(rel) == (mtime, size):
                    tags = _decode(blob)
                    if tags is not None:
                        state.tags[rel], state.stamps[rel] = tags, (mtime, size)
        stamps = state.stamps
        todo = [(rel, stamp[1]) for rel, stamp in stats.items() - stamps.items()]
        for rel, tags in parse_many(self._parser, todo, self.workers):
            stamp = stamps[rel] = stats[rel]
            state.tags[rel] = tags
            if tags.skipped != NO_GRAMMAR:
                changes.files.append((rel, *stamp, tags.to_tuple()))
        # Every file of ``stats`` has tags now: any more are of files that went.
        if len(stamps) != len(stats):
            changes.files_removed = [rel for rel in stamps if rel not in stats]
            for rel in changes.files_removed:
                del stamps[rel], state.tags[rel]
        return len(todo)

    def _relative(self, path: str) -> str:
        if os.path.isabs(path):
            try:
                return Path(os.path.realpath(path)).relative_to(self.root).as_posix()
            except ValueError:
                return path
        return os.path.normpath(path).replace(os.sep, "/")


def _digest(parts: Iterable[str]) -> str:
    h = hashlib.blake2b(digest_size=16)
    for part in parts:
        h.update(part.encode("utf-8", "surrogateescape"))
        h.update(b"\n")
    return h.hexdigest()


_stamp_of = operator.attrgetter("st_mtime_ns", "st_size")


def _stamps(base: str, files: list[str]) -> dict[str, Stamp]:
    """The stamp of each of ``files`` that is still there (one stat each, looped in C)."""
    try:
        return dict(zip(files, map(_stamp_of, map(os.stat, map(base.__add__, files))), strict=True))
    except OSError:
        pass  # one went since the scan: the slow way, leaving it out
    stamps: dict[str, Stamp] = {}
    for rel in files:
        try:
            stamps[rel] = _stamp_of(os.stat(base + rel))
        except OSError:
            continue
    return stamps


def _stats_digest(stats: dict[str, tuple[int, int]]) -> str:
    """A digest of every file's path, mtime and size (joined in C: it runs at every build)."""
    h = hashlib.blake2b("\0".join(stats).encode("utf-8", "surrogateescape"), digest_size=16)
    h.update(array("q", itertools.chain.from_iterable(stats.values())).tobytes())
    return h.hexdigest()


def _counter_name(repo_map: RepoMap) -> str:
    counter = repo_map.count_tokens
    return f"{getattr(counter, '__module__', '')}.{getattr(counter, '__qualname__', counter)}"


def _decode(blob: bytes) -> FileTags | None:
    try:
        return FileTags.from_tuple(marshal.loads(blob))
    except (ValueError, EOFError, TypeError):
        return None  # a damaged row: the file is parsed again


def _reused(result: RepoMapResult) -> RepoMapResult:
    return RepoMapResult(result.text, list(result.notes), result.files, 0, from_cache=True)
