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
"""Fewer files than this are parsed in-process (starting workers costs ~0.5 s)."""


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


def _parse_in_workers(
    parser: FileParser, todo: Sequence[tuple[str, int]], workers: int
) -> list[tuple[str, FileTags]]:
    # Biggest first, dealt round-robin, so the shares take about as long.
    ordered = sorted(todo, key=lambda item: -item[1])
    shares = [ordered[i::workers] for i in range(workers)]
    env = dict(os.environ)
    package_parent = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [package_parent, env.get("PYTHONPATH")]))
    procs: list[tuple[subprocess.Popen[bytes], bytes]] = []
    for share in shares:
        request = marshal.dumps((parser.root, parser.max_file_bytes, share))
        try:
            proc = subprocess.Popen(
                [sys.executable, "-m", "clover_code.repomap.parse"],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                env=env,
            )
        except OSError:
            continue
        procs.append((proc, request))
    done: list[tuple[str, FileTags]] = []
    for proc, request in procs:
        try:
            output, _ = proc.communicate(request)
            if proc.returncode == 0:
                done += [(rel, FileTags.from_tuple(data)) for rel, data in marshal.loads(output)]
        except (OSError, ValueError, EOFError, TypeError):
            proc.kill()
    return done


def _worker_main() -> None:
    """Parse the files named on stdin; write their tags to stdout (both ``marshal``)."""
    root, max_file_bytes, share = marshal.loads(sys.stdin.buffer.read())
    parser = FileParser(root, max_file_bytes)
    result = [(rel, parser.parse(rel, size).to_tuple()) for rel, size in share]
    sys.stdout.buffer.write(marshal.dumps(result))


if __name__ == "__main__":
    _worker_main()
