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
import marshal
import os
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from clover_code.repomap.cache import TagCache
from clover_code.repomap.languages import fingerprint
from clover_code.repomap.notes import collect as collect_notes
from clover_code.repomap.parse import NO_GRAMMAR, FileParser, parse_many
from clover_code.repomap.rank import RefGraph
from clover_code.repomap.render import TokenCounter, estimate_tokens, fit_to_budget
from clover_code.repomap.scan import SourceScanner
from clover_code.repomap.tags import FileTags

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


@dataclass(slots=True)
class _Entry:
    mtime_ns: int
    size: int
    tags: FileTags


@dataclass(slots=True)
class _State:
    entries: dict[str, _Entry] = field(default_factory=dict)
    loaded: bool = False
    graph: RefGraph | None = None
    graph_digest: str = ""
    last_key: str = ""
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
        dirs = self._cache.get("dirs")
        if isinstance(dirs, dict):
            self._scanner.load(dirs)

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
        stats: dict[str, tuple[int, int]] = {}
        base = f"{self.root}/"
        for rel in scan.files:
            try:
                st = os.stat(base + rel)
            except OSError:
                continue
            stats[rel] = (st.st_mtime_ns, st.st_size)
        files = list(stats)
        digest = _digest(f"{rel}\0{m}\0{s}" for rel, (m, s) in stats.items())
        focus = sorted({p for p in map(self._relative, [*mentioned, *edited]) if p in stats})
        idents = sorted({w for w in mentioned if w.isidentifier() and w not in stats})
        key = _digest([digest, str(budget), *focus, "\0", *idents, _counter_name(self)])
        state = self._state
        if key == state.last_key and state.last_result is not None:
            return _reused(state.last_result)
        if not state.loaded:
            stored = self._cache.get("maps", key)
            if isinstance(stored, tuple) and len(stored) == 3:
                text, notes, count = stored
                result = RepoMapResult(text, list(notes), count, from_cache=True)
                state.last_key, state.last_result = key, result
                return result
        parsed = self._refresh(stats)
        if state.graph is None or state.graph_digest != digest:
            state.graph = RefGraph.build(files, [state.entries[f].tags for f in files])
            state.graph_digest = digest
        graph = state.graph
        index = {rel: i for i, rel in enumerate(files)}
        # A definition costs at least one line of map: more than the budget never fits.
        ranked = graph.rank_definitions({index[f] for f in focus}, set(idents), limit=budget)
        all_defs = [t.defs for t in graph.tags]
        text = fit_to_budget(ranked, files, all_defs, budget, self.count_tokens)
        notes = collect_notes(
            files,
            graph.tags,
            self._parser.grammar,
            scan.capped,
            self.max_files,
            self.max_file_bytes,
        )
        if self._cache.error:
            notes.append(self._cache.error)
        result = RepoMapResult(text, notes, len(files), parsed)
        self._cache.put("dirs", self._scanner.export())
        self._cache.put("maps", (text, notes, len(files)), key)
        state.last_key, state.last_result = key, result
        return result

    def _refresh(self, stats: dict[str, tuple[int, int]]) -> int:
        """Bring the tags up to date with ``stats``; returns how many files were parsed."""
        state = self._state
        if not state.loaded:
            state.loaded = True
            for rel, (mtime, size, blob) in self._cache.files().items():
                if stats.get(rel) == (mtime, size):
                    tags = _decode(blob)
                    if tags is not None:
                        state.entries[rel] = _Entry(mtime, size, tags)
        todo: list[tuple[str, int]] = []
        for rel, (mtime, size) in stats.items():
            entry = state.entries.get(rel)
            if entry is None or entry.mtime_ns != mtime or entry.size != size:
                todo.append((rel, size))
        changed: list[tuple[str, int, int, Any]] = []
        for rel, tags in parse_many(self._parser, todo, self.workers):
            mtime, size = stats[rel]
            state.entries[rel] = _Entry(mtime, size, tags)
            if tags.skipped != NO_GRAMMAR:
                changed.append((rel, mtime, size, tags.to_tuple()))
        removed = [rel for rel in state.entries if rel not in stats]
        for rel in removed:
            del state.entries[rel]
        self._cache.update_files(changed, removed)
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
