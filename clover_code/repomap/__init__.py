"""The repo map: a ranked, token-budgeted outline of the workspace's code.

``RepoMap(root, cache_path).render(budget_tokens, mentioned=..., edited=...)``
returns the map text; ``build`` returns it with notes on what was skipped.
Stages, one module each: ``scan`` (which files), ``tags`` (tree-sitter
definitions and references, queries in ``queries/``), ``cache`` (SQLite),
``rank`` (reference graph and personalised PageRank), ``render`` (text within
the budget).
"""

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
