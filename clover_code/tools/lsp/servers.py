"""Which language server checks which files: the built-in table and the ``[lsp]`` settings.

A built-in language lists its servers in order of preference; the first
one found in the sandbox runs (Python: basedpyright, then pyright, then
pylsp). A language in the settings replaces any of the built-in values it
sets (a ``command`` replaces the candidates with that one program) or adds
a language of its own, which then needs a command and patterns.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import PurePath
from typing import Any

from clover_code.config.sections import LspServerConfig

__all__ = ["BUILTIN", "ServerSpec", "server_specs"]


@dataclass(frozen=True, slots=True)
class ServerSpec:
    """One language's server: the programs to try, the files it checks, its options."""

    language: str
    candidates: tuple[tuple[str, ...], ...]
    """Command lines to try in order; the first whose program is found runs."""
    patterns: tuple[str, ...]
    """File-name globs (``*.py``), matched against the name or the relative path."""
    language_ids: Mapping[str, str] = field(default_factory=dict)
    """LSP ``languageId`` by file suffix; the language's name otherwise."""
    init_options: Mapping[str, Any] = field(default_factory=dict)
    configured: bool = False
    """Whether the command comes from the settings (not the built-in table)."""

    def matches(self, rel: str) -> bool:
        """Whether the file at ``rel`` (relative to the workspace) is this language's."""
        name = PurePath(rel).name
        return any(
            fnmatch.fnmatchcase(name, p) or fnmatch.fnmatchcase(rel, p) for p in self.patterns
        )

    def language_id(self, rel: str) -> str:
        """The ``languageId`` to open ``rel`` with."""
        return self.language_ids.get(PurePath(rel).suffix.lower(), self.language)

    def names(self) -> str:
        """The programs it tries, for a sentence: ``basedpyright-langserver, pylsp``."""
        return ", ".join(dict.fromkeys(c[0] for c in self.candidates))


_TS_IDS = {
    ".ts": "typescript",
    ".mts": "typescript",
    ".cts": "typescript",
    ".tsx": "typescriptreact",
    ".js": "javascript",
    ".mjs": "javascript",
    ".cjs": "javascript",
    ".jsx": "javascriptreact",
}

BUILTIN: dict[str, ServerSpec] = {
    "python": ServerSpec(
        "python",
        (
            ("basedpyright-langserver", "--stdio"),
            ("pyright-langserver", "--stdio"),
            ("pylsp",),
        ),
        ("*.py", "*.pyi"),
    ),
    "typescript": ServerSpec(
        "typescript",
        (("typescript-language-server", "--stdio"),),
        tuple(f"*{suffix}" for suffix in _TS_IDS),
        _TS_IDS,
    ),
    "go": ServerSpec("go", (("gopls",),), ("*.go",)),
    "rust": ServerSpec("rust", (("rust-analyzer",),), ("*.rs",)),
}
"""The built-in languages and their servers, most preferred first."""


def server_specs(settings: Mapping[str, LspServerConfig]) -> tuple[list[ServerSpec], list[str]]:
    """The languages to check (built-in ones merged with the settings' ``[lsp]``) and a
    sentence for each entry that cannot be used."""
    specs: list[ServerSpec] = []
    problems: list[str] = []
    for language in dict.fromkeys([*BUILTIN, *settings]):
        config = settings.get(language)
        base = BUILTIN.get(language)
        if config is not None and not config.enabled:
            continue
        if config is None:
            assert base is not None
            specs.append(base)
            continue
        candidates = base.candidates if base is not None else ()
        if config.command:
            candidates = ((config.command, *config.args),)
        patterns = tuple(config.patterns) or (base.patterns if base is not None else ())
        if not candidates or not patterns:
            missing = "a command" if not candidates else "patterns"
            problems.append(
                f"the language server for '{language}' in [lsp.{language}] has no {missing}; "
                f'give it {missing} (e.g. command = "pylsp", patterns = ["*.py"]), '
                "so it is off."
            )
            continue
        specs.append(
            ServerSpec(
                language,
                candidates,
                patterns,
                base.language_ids if base is not None else {},
                config.init_options or (base.init_options if base is not None else {}),
                configured=bool(config.command),
            )
        )
    return specs, problems
