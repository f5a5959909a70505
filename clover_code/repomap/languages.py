"""Which languages the repo map reads, and the tree-sitter grammar and tag query of each.

A language is mapped when its official grammar wheel (``tree-sitter-python``,
...) is importable. Its tag query is the wheel's own ``queries/tags.scm``
where the wheel ships one, plus our ``queries/<language>-tags.scm`` (package
data) for what the wheel's query lacks or, where it ships none, the whole
query. TypeScript and TSX also use the JavaScript wheel's query, because the
TypeScript wheel's covers only what TypeScript adds.

A language whose grammar is not installed is skipped with a note naming the
wheel to install; nothing is ever downloaded.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import importlib.util
import marshal
import os
import re
from dataclasses import dataclass
from importlib import resources
from typing import Any

import tree_sitter

__all__ = [
    "EXTENSIONS",
    "Grammar",
    "GrammarUnavailable",
    "LanguageInfo",
    "fingerprint",
    "language_title",
    "link_group",
    "load_grammar",
]


@dataclass(frozen=True, slots=True)
class LanguageInfo:
    """A language the map knows: its display name and where its grammar lives."""

    name: str
    title: str
    module: str
    function: str = "language"
    inherits: tuple[str, ...] = ()
    """Modules whose ``queries/tags.scm`` is used before this language's own."""
    queries: str = ""
    """Whose ``queries/<name>-tags.scm`` of ours to use (default: this language's)."""


def _info(name: str, title: str, **kwargs: Any) -> LanguageInfo:
    return LanguageInfo(name, title, kwargs.pop("module", f"tree_sitter_{name}"), **kwargs)


_LANGUAGES = {
    info.name: info
    for info in (
        _info("python", "Python"),
        _info("javascript", "JavaScript"),
        _info(
            "typescript",
            "TypeScript",
            function="language_typescript",
            inherits=("tree_sitter_javascript",),
        ),
        _info(
            "tsx",
            "TSX",
            module="tree_sitter_typescript",
            function="language_tsx",
            inherits=("tree_sitter_javascript",),
            queries="typescript",
        ),
        _info("go", "Go"),
        _info("rust", "Rust"),
        _info("java", "Java"),
        _info("c", "C"),
        _info("cpp", "C++"),
        _info("ruby", "Ruby"),
        _info("bash", "Bash"),
        # Known languages whose grammar wheels are not installed by default:
        # used when present, noted as skipped otherwise.
        _info("c_sharp", "C#"),
        _info("php", "PHP", function="language_php"),
        _info("kotlin", "Kotlin"),
        _info("swift", "Swift"),
        _info("scala", "Scala"),
        _info("lua", "Lua"),
        _info("elixir", "Elixir"),
        _info("haskell", "Haskell"),
        _info("ocaml", "OCaml", function="language_ocaml"),
        _info("dart", "Dart"),
        _info("zig", "Zig"),
        _info("julia", "Julia"),
    )
}

_EXTENSION_NAMES = {
    "python": ".py .pyi",
    "javascript": ".js .mjs .cjs .jsx",
    "typescript": ".ts .mts .cts",
    "tsx": ".tsx",
    "go": ".go",
    "rust": ".rs",
    "java": ".java",
    "c": ".c .h",
    "cpp": ".cc .cpp .cxx .c++ .hh .hpp .hxx .h++",
    "ruby": ".rb",
    "bash": ".sh .bash",
    "c_sharp": ".cs",
    "php": ".php",
    "kotlin": ".kt .kts",
    "swift": ".swift",
    "scala": ".scala",
    "lua": ".lua",
    "elixir": ".ex .exs",
    "haskell": ".hs",
    "ocaml": ".ml .mli",
    "dart": ".dart",
    "zig": ".zig",
    "julia": ".jl",
}

EXTENSIONS: dict[str, str] = {
    ext: name for name, exts in _EXTENSION_NAMES.items() for ext in exts.split()
}
"""File extension (lower case, with the dot) -> language name."""


_LINK_GROUPS = {"typescript": "javascript", "tsx": "javascript", "cpp": "c"}


def link_group(name: str) -> str:
    """The family of languages whose names can refer to each other."""
    return _LINK_GROUPS.get(name, name)


@dataclass(slots=True)
class Grammar:
    """A loaded language: a parser and the compiled tag query."""

    name: str
    parser: tree_sitter.Parser
    query: tree_sitter.Query


def _wheel_tags(module: str) -> str:
    try:
        path = resources.files(module) / "queries" / "tags.scm"
        return path.read_text(encoding="utf-8") if path.is_file() else ""
    except (ModuleNotFoundError, OSError):
        return ""


def _own_tags(name: str) -> str:
    path = resources.files("clover_code.repomap") / "queries" / f"{name}-tags.scm"
    return path.read_text(encoding="utf-8") if path.is_file() else ""


class GrammarUnavailable(Exception):
    """A language that cannot be mapped here; the message is the note to show."""


def load_grammar(name: str) -> Grammar:
    """The grammar of ``name``; ``GrammarUnavailable`` when it cannot be used here."""
    info = _LANGUAGES[name]
    wheel = info.module.replace("_", "-")
    if importlib.util.find_spec(info.module) is None:
        raise GrammarUnavailable(
            f"no tree-sitter grammar is installed for {info.title}; `pip install {wheel}` adds one"
        )
    parts = [_wheel_tags(m) for m in (*info.inherits, info.module)]
    parts.append(_own_tags(info.queries or name))
    source = "\n".join(part for part in parts if part)
    if not source.strip():
        raise GrammarUnavailable(f"the {wheel} grammar ships no tag query and clover-code has none")
    try:
        module = importlib.import_module(info.module)
        language = tree_sitter.Language(getattr(module, info.function)())
        query = _role_query(language, source)
    except (ImportError, AttributeError, ValueError, TypeError, tree_sitter.QueryError) as exc:
        raise GrammarUnavailable(
            f"the installed {wheel} grammar cannot be used with tree-sitter "
            f"{_tree_sitter_version()} ({exc}); install a matching version"
        ) from exc
    return Grammar(name, tree_sitter.Parser(language), query)


def fingerprint() -> str:
    """A digest that changes when a grammar wheel or one of our tag queries changes.

    Cheap (no imports): it stats each grammar module rather than reading
    package metadata.
    """
    digest = hashlib.blake2b(digest_size=16)
    digest.update(f"schema-1 {tree_sitter.__file__} {marshal.version}".encode())
    for info in _LANGUAGES.values():
        spec = importlib.util.find_spec(info.module)
        origin = spec.origin if spec is not None else None
        stamp = ""
        if origin:
            with contextlib.suppress(OSError):
                st = os.stat(origin)
                stamp = f"{origin} {st.st_mtime_ns} {st.st_size}"
        digest.update(f"{info.name}={stamp}\n".encode())
    queries = resources.files("clover_code.repomap") / "queries"
    for entry in sorted(queries.iterdir(), key=lambda e: e.name):
        if entry.name.endswith(".scm"):
            digest.update(entry.name.encode() + b"\0" + entry.read_bytes())
    return digest.hexdigest()


_NAME = re.compile(r"@name(?![.\w])")
_ROLE = re.compile(r"@((?:definition|reference)\.[\w.]+)")


def _role_query(language: tree_sitter.Language, source: str) -> tree_sitter.Query:
    """The tag query with each ``@name`` renamed after its pattern's role.

    ``@name`` becomes ``@name.definition.function``, ``@name.reference.call``
    and so on, and every other capture is disabled, so one ``captures`` call
    yields just the name nodes, already sorted by role (cheaper than
    ``matches``). Patterns without a role (Go's package clause) are dropped.
    """
    probe = tree_sitter.Query(language, source)
    raw = source.encode("utf-8")
    pieces: list[str] = []
    for i in range(probe.pattern_count):
        text = raw[probe.start_byte_for_pattern(i) : probe.end_byte_for_pattern(i)].decode()
        role = _ROLE.search(text)
        if role is not None:
            pieces.append(_NAME.sub(f"@name.{role.group(1)}", text))
    query = tree_sitter.Query(language, "\n".join(pieces))
    for i in range(query.capture_count):
        capture = query.capture_name(i)
        if not capture.startswith("name."):
            query.disable_capture(capture)
    return query


def _tree_sitter_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("tree-sitter")
    except PackageNotFoundError:
        return "(unknown version)"


def language_title(name: str) -> str:
    """How a language is named to a person."""
    return _LANGUAGES[name].title
