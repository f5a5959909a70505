"""The ``repo_map`` tool: a ranked outline of the workspace's code.

It shows the most referenced classes, functions and methods (their first
lines, under their file names), ranked by PageRank over the reference graph
and leaning toward the files or names the model passes as ``focus``. One
``RepoMap`` per workspace root is kept by the tool, with its tags cached on
disk (``repomap.sqlite3`` in the user data dir), so later calls cost only the
files that changed. The build runs in a worker thread.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import ClassVar

from pydantic import BaseModel, ConfigDict, Field

from clover_code.config.sections import empty_list
from clover_code.protocol import RepoMapBuilt
from clover_code.repomap import RepoMap
from clover_code.tools.base import Tool, ToolContext, ToolKind, ToolResult

__all__ = ["RepoMapArgs", "RepoMapTool", "default_cache_path"]

DEFAULT_BUDGET = 2048
"""Tokens of map the tool returns when the model names no budget."""


def default_cache_path() -> Path:
    """Where the repo map cache lives: the user data dir, shared by all workspaces."""
    from clover_code.config.settings import user_data_dir

    return user_data_dir() / "repomap.sqlite3"


class RepoMapArgs(BaseModel):
    """Arguments of repo_map."""

    model_config = ConfigDict(defer_build=True)
    """Built when a call is first validated (the schema is kept: ``schema_cache``)."""

    focus: list[str] = Field(
        default_factory=empty_list,
        description=(
            "Files (paths relative to the workspace root) or identifiers to centre the map "
            "on; their neighbours in the reference graph rank higher."
        ),
    )
    budget_tokens: int = Field(
        DEFAULT_BUDGET, ge=256, le=16_384, description="Roughly how many tokens of map to return."
    )


class RepoMapTool(Tool[RepoMapArgs]):
    """Shows the ranked repo map; ``repo_map`` may be given to share one with the agent."""

    name: ClassVar[str] = "repo_map"
    description: ClassVar[str] = (
        "Show an outline of the repository's most important code: for each file, the "
        "definitions (classes, functions, methods) other code uses most, ranked by how "
        "the code references them. Pass `focus` (files or identifiers) to centre the "
        "outline on what you are working on. Use it to find where things are defined "
        "before reading files."
    )
    kind: ClassVar[ToolKind] = "read"
    Args = RepoMapArgs

    def __init__(self, repo_map: RepoMap | None = None, cache_path: Path | None = None) -> None:
        self._maps: dict[Path, RepoMap] = {}
        if repo_map is not None:
            self._maps[repo_map.root] = repo_map
        self._cache_path = cache_path

    def summary(self, args: RepoMapArgs) -> str:
        """The focus, if any."""
        return ", ".join(args.focus)[:120] or "whole repository"

    def _map_for(self, root: Path) -> RepoMap:
        repo_map = self._maps.get(root)
        if repo_map is None:
            cache = self._cache_path if self._cache_path is not None else default_cache_path()
            repo_map = self._maps[root] = RepoMap(root, cache)
        return repo_map

    async def run(self, args: RepoMapArgs, ctx: ToolContext) -> ToolResult:
        """Build (or reuse) the map and return it with its notes."""
        repo_map = self._map_for(ctx.workspace.root)
        result = await asyncio.to_thread(repo_map.build, args.budget_tokens, mentioned=args.focus)
        text = result.text
        if not text:
            text = (
                "The repository has no source files the map can outline "
                "(no definitions found in any mapped language)."
            )
        if result.notes:
            text += "\n" + "\n".join(f"[note: {note}]" for note in result.notes)
        return ToolResult(
            text,
            display=RepoMapBuilt(files=result.files, parsed=result.parsed, notes=result.notes),
        )
