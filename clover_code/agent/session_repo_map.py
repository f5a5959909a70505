"""The repository map a session starts with, waited for only so long.

``repo_map_for`` builds (or reads from its cache) the shared repo map and
its text for the system prompt; a cold map of a large repository that takes
longer than ``REPO_MAP_WAIT`` goes on building in the background, and the
session starts without it in its prompt.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from clover_code.config.settings import user_data_dir
from clover_code.repomap import RepoMap

__all__ = ["REPO_MAP_WAIT", "repo_map_for"]

REPO_MAP_WAIT = 10.0
"""Seconds a session start waits for the repo map; a cold map of a large repo
goes on building (and caching) in the background instead of holding up the start."""


async def repo_map_for(root: Path, budget: int) -> tuple[RepoMap | None, str, list[str]]:
    """The shared repo map, its text for the system prompt, and notes."""
    if budget <= 0:
        return None, "", []
    repo_map = RepoMap(root, user_data_dir() / "repomap.sqlite3")
    build = asyncio.ensure_future(asyncio.to_thread(repo_map.render, budget))
    try:
        text = await asyncio.wait_for(asyncio.shield(build), REPO_MAP_WAIT)
    except TimeoutError:
        return (
            repo_map,
            "",
            [
                "the repository map is still being built; it is left out of this session's "
                "prompt (the repo_map tool will have it)."
            ],
        )
    return repo_map, text, []
