"""Parsing many files: in this process, or across worker processes for a cold build.

Parsing is where a cold map spends its time, and tree-sitter holds the GIL,
so a large batch is spread over worker processes: ``python -m
clover_code.repomap.parse``, one share of the files each, talking ``marshal``
over stdin/stdout. Plain subprocesses rather than ``multiprocessing``: no
``fork`` from a thread of an asyncio program, and no re-import of the
caller's ``__main__``.
"""

from __future__ import annotations

import marshal
import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from clover_code.repomap.languages import EXTENSIONS, Grammar, GrammarUnavailable, load_grammar
from clover_code.repomap.tags import SKIP_LARGE, SKIP_UNREADABLE, FileTags, extract_tags

__all__ = ["NO_GRAMMAR", "FileParser", "parse_many"]

NO_GRAMMAR = "no-grammar"
"""Skip reason of a file whose language has no usable grammar here."""
PARALLEL_MIN_FILES = 200
"""Fewer files than this are parsed in-process (a worker takes ~0.2 s of CPU to start)."""
_FILE_COST = 2048
"""Bytes of source that take about as long to parse as the fixed cost of one file."""
_GRAMMAR_COST = 200_000
"""Bytes of source that take about as long to parse as loading one grammar."""


class FileParser:
    """Reads and parses files under ``root``, loading each grammar once."""

    def __init__(self, root: str, max_file_bytes: int) -> None:
        self.root = root
        self.max_file_bytes = max_file_bytes
        self.grammars: dict[str, Grammar | str] = {}
        """Loaded grammars, or the note saying why a language cannot be mapped."""

    def grammar(self, lang: str) -> Grammar | str:
        """The grammar of ``lang``, or why there is none."""
        grammar = self.grammars.get(lang)
        if grammar is None:
            try:
                grammar = load_grammar(lang)
            except GrammarUnavailable as exc:
                grammar = str(exc)
            self.grammars[lang] = grammar
        return grammar

    def parse(self, rel: str, size: int) -> FileTags:
        """The tags of the file at ``rel`` (whose size is ``size`` bytes)."""
        lang = EXTENSIONS[os.path.splitext(rel)[1].lower()]
        grammar = self.grammar(lang)
        if isinstance(grammar, str):
            return FileTags(lang, skipped=NO_GRAMMAR)
        if size > self.max_file_bytes:
            return FileTags(lang, skipped=SKIP_LARGE)
        try:
            with open(os.path.join(self.root, rel), "rb") as f:
                data = f.read(self.max_file_bytes + 1)
        except OSError:
            return FileTags(lang, skipped=SKIP_UNREADABLE)
        return extract_tags(data, grammar, self.max_file_bytes)


def parse_many(
    parser: FileParser, todo: Sequence[tuple[str, int]], workers: int
) -> list[tuple[str, FileTags]]:
    """(path, tags) for each (path, size) in ``todo``, in no particular order.

    With ``workers`` > 1 and a large batch, worker processes parse; a worker
    that fails (cannot start, dies) leaves its share to this process.
    """
    done: list[tuple[str, FileTags]] = []
    if workers > 1 and len(todo) >= PARALLEL_MIN_FILES:
        done = _parse_in_workers(parser, todo, workers)
    finished = {rel for rel, _ in done}
    done += [(rel, parser.parse(rel, size)) for rel, size in todo if rel not in finished]
    return done


def _shares(todo: Sequence[tuple[str, int]], count: int) -> list[list[tuple[str, int]]]:
    """``todo`` split into at most ``count`` shares of about equal work.

    Files go biggest first to the share that would then have the least work,
    taken as bytes of source plus a fixed cost per file and per grammar the
    share has to load (so a language's files stay together when that is
    cheap, and fewer workers pay for compiling its query).
    """
    loads = [0] * count
    langs: list[set[str]] = [set() for _ in range(count)]
    shares: list[list[tuple[str, int]]] = [[] for _ in range(count)]
    for item in sorted(todo, key=lambda item: -item[1]):
        lang = EXTENSIONS[os.path.splitext(item[0])[1].lower()]
        costs = [
            load if lang in known else load + _GRAMMAR_COST
            for load, known in zip(loads, langs, strict=True)
        ]
        i = costs.index(min(costs))
        shares[i].append(item)
        langs[i].add(lang)
        loads[i] = costs[i] + item[1] + _FILE_COST
    return [share for share in shares if share]


def _parse_in_workers(
    parser: FileParser, todo: Sequence[tuple[str, int]], workers: int
) -> list[tuple[str, FileTags]]:
    env = dict(os.environ)
    package_parent = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [package_parent, env.get("PYTHONPATH")]))
    procs: list[tuple[subprocess.Popen[bytes], list[tuple[str, int]]]] = []
    for share in _shares(todo, workers):
        try:
            proc = subprocess.Popen(
                [sys.executable, "-P", "-m", "clover_code.repomap.parse"],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                env=env,
            )
        except OSError:
            continue
        procs.append((proc, share))
    # All are started (they boot in parallel) and then given their whole
    # shares before any output is read, so they parse at once. A worker reads
    # all of its input before it writes anything, so filling one's stdin
    # never waits on another.
    for proc, share in procs:
        assert proc.stdin is not None
        try:
            with proc.stdin:
                proc.stdin.write(marshal.dumps((parser.root, parser.max_file_bytes, share)))
        except OSError:
            pass  # it died early: its share is parsed in this process
    done: list[tuple[str, FileTags]] = []
    from_tuple = FileTags.from_tuple
    for proc, _share in procs:
        assert proc.stdout is not None
        try:
            with proc.stdout:
                output = proc.stdout.read()
            if proc.wait() == 0:
                done += [(rel, from_tuple(data)) for rel, data in marshal.loads(output)]
        except (OSError, ValueError, EOFError, TypeError):
            proc.kill()
            proc.wait()
    return done


def _worker_main() -> None:
    """Parse the files named on stdin; write their tags to stdout (both ``marshal``)."""
    root, max_file_bytes, share = marshal.loads(sys.stdin.buffer.read())
    parser = FileParser(root, max_file_bytes)
    result = [(rel, parser.parse(rel, size).to_tuple()) for rel, size in share]
    sys.stdout.buffer.write(marshal.dumps(result))


if __name__ == "__main__":
    _worker_main()
