"""The ``apply_patch`` tool: add, delete, move and update files with one patch.

The patch is a Codex ``*** Begin Patch`` envelope or a unified diff (see
``patch_parse``), applied all or nothing (``patch_apply``, loaded by the first
patch).
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import ClassVar

from pydantic import BaseModel, ConfigDict, Field

from clover_code.errors import ToolError
from clover_code.tools.arguments import CONTENT_LIMIT
from clover_code.tools.base import Tool, ToolContext, ToolKind, ToolResult
from clover_code.tools.lsp.attach import with_diagnostics

__all__ = ["ApplyPatchArgs", "ApplyPatchTool"]


class ApplyPatchArgs(BaseModel):
    """Arguments of apply_patch."""

    model_config = ConfigDict(defer_build=True)
    """Built when a call is first validated (the schema is kept: ``schema_cache``)."""

    patch: str = Field(
        description="The patch: a '*** Begin Patch' ... '*** End Patch' envelope, or a "
        "unified diff with ---/+++ headers and @@ hunks."
    )


class ApplyPatchTool(Tool[ApplyPatchArgs]):
    """Applies a multi-file patch atomically."""

    name: ClassVar[str] = "apply_patch"
    description: ClassVar[str] = (
        "Add, delete, move and edit files with one patch; either every file changes or none "
        "does. Format:\n*** Begin Patch\n*** Add File: path/new.py\n+line of the new file\n"
        "*** Delete File: path/old.py\n*** Update File: path/app.py\n*** Move to: path/moved.py "
        "(optional)\n@@ def some_function():  (optional line near the change)\n context line\n"
        "-removed line\n+added line\n*** End Patch\nGive about three lines of context around "
        "each change, copied exactly from the file. A unified diff (---/+++ headers, "
        "@@ -l,n +l,n @@ hunks) works too. Paths are relative to the workspace root."
    )
    kind: ClassVar[ToolKind] = "edit"
    written_arguments: ClassVar[frozenset[str]] = frozenset({"patch"})
    Args = ApplyPatchArgs
    argument_limits: ClassVar[Mapping[str, int]] = {"patch": CONTENT_LIMIT}

    def summary(self, args: ApplyPatchArgs) -> str:
        """The files the patch touches."""
        from clover_code.tools.patch_parse import parse_patch

        try:
            paths = [p for change in parse_patch(args.patch) for p in change.paths]
        except ToolError:
            return "(unreadable patch)"
        return ", ".join(paths)[:120]

    async def run(self, args: ApplyPatchArgs, ctx: ToolContext) -> ToolResult:
        """Apply the patch."""
        from clover_code.tools.patch_apply import apply_patch

        result = await asyncio.to_thread(apply_patch, ctx.workspace, args.patch)
        return await with_diagnostics(result, ctx)
