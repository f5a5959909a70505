"""The repo map: a ranked, token-budgeted outline of the workspace's code.

``RepoMap(root, cache_path).render(budget_tokens, mentioned=..., edited=...)``
returns the map text; ``build`` returns it with notes on what was skipped.
Stages, one module each: ``scan`` (which files), ``tags`` (tree-sitter
definitions and references, queries in ``queries/``), ``cache`` (SQLite),
``graph`` (the reference graph, updated file by file), ``rank``
(personalised PageRank, in numpy), ``render`` (text within the budget).

The public names are imported on first use, so a parse worker (``python -m
clover_code.repomap.parse``) loads only the modules parsing needs: every
cold build starts a few of them.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from clover_code.repomap.render import estimate_tokens
    from clover_code.repomap.repomap import (
        DEFAULT_MAX_FILE_BYTES,
        DEFAULT_MAX_FILES,
        RepoMap,
        RepoMapResult,
    )

__all__ = [
    "DEFAULT_MAX_FILES",
    "DEFAULT_MAX_FILE_BYTES",
    "RepoMap",
    "RepoMapResult",
    "estimate_tokens",
]

_HOMES = {
    "DEFAULT_MAX_FILES": "repomap",
    "DEFAULT_MAX_FILE_BYTES": "repomap",
    "RepoMap": "repomap",
    "RepoMapResult": "repomap",
    "estimate_tokens": "render",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{home}"), name)
    globals()[name] = value
    return value
