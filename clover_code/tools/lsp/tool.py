"""The ``diagnostics`` tool: what the language server says about one file now.

Read-only: the file's text on disk (or in the editor's buffer) is sent to its
server as an edit's would be, nothing is written. It waits longer than an
edit does (``LOOK_WAIT`` at least), since the model asked and the server
may still be starting.
"""

from __future__ import annotations

import asyncio
from typing import ClassVar

from pydantic import BaseModel, ConfigDict, Field

from clover_code.errors import ToolError
from clover_code.tools.base import Tool, ToolContext, ToolKind, ToolResult
from clover_code.tools.fileio import missing_path_error
from clover_code.tools.lsp.attach import read_text
from clover_code.tools.lsp.report import line_of

__all__ = ["DiagnosticsArgs", "DiagnosticsTool"]

LOOK_WAIT = 15.0
"""Seconds the tool waits for the server at least."""
MAX_LISTED = 200
"""Diagnostics listed in one result."""


class DiagnosticsArgs(BaseModel):
    """Arguments of diagnostics."""

    # Built when first used: a session without language servers never validates one.
    model_config = ConfigDict(defer_build=True)

    path: str = Field(description="The file to check, relative to the workspace root.")


class DiagnosticsTool(Tool[DiagnosticsArgs]):
    """Reports the language server's diagnostics for a file."""

    name: ClassVar[str] = "diagnostics"
    description: ClassVar[str] = (
        "List the errors (and, if configured, warnings) the language server reports for a "
        "file as it is now: type errors, undefined names, syntax errors. Edits already "
        "report their new diagnostics; use this to check a file you did not edit, or when "
        "an edit's result said the server had not answered yet."
    )
    kind: ClassVar[ToolKind] = "read"
    Args = DiagnosticsArgs
    concurrent: ClassVar[bool] = True

    async def run(self, args: DiagnosticsArgs, ctx: ToolContext) -> ToolResult:
        """Check the file."""
        servers = ctx.diagnostics
        if servers is None:
            raise ToolError("no language server runs in this session, so there are no diagnostics")
        path = ctx.workspace.resolve(args.path)
        rel = ctx.workspace.relative(path)
        if not path.is_file():
            if path.is_dir():
                raise ToolError(f"'{rel}' is a directory; give the path of one file")
            raise missing_path_error(ctx.workspace, args.path, path)
        if not servers.handles(rel):
            raise ToolError(
                f"no language server checks '{rel}' (its language has none, or it is off); "
                "run the project's own checker with the shell instead"
            )
        text = await asyncio.to_thread(read_text, ctx, path)
        if text is None:
            raise ToolError(f"'{rel}' is not UTF-8 text, so no language server can read it")
        checks = await servers.check([(rel, text)], wait=max(LOOK_WAIT, servers.wait))
        notices = servers.take_notices()
        if not checks:
            why = notices[-1] if notices else "its language server is off"
            return ToolResult(f"No diagnostics for {rel}: {why}", notices=notices)
        check = checks[0]
        if check.waiting is not None:
            return ToolResult(f"No diagnostics for {rel} yet: {check.waiting}.", notices=notices)
        if not check.diagnostics:
            kinds = "errors" if servers.severity == "error" else "errors or warnings"
            text = f"{check.server} reports no {kinds} in {rel}."
            return ToolResult(text, notices=notices)
        lines = [line_of(d) for d in check.diagnostics[:MAX_LISTED]]
        more = len(check.diagnostics) - MAX_LISTED
        if more > 0:
            lines.append(f"… and {more} more")
        head = f"{len(check.diagnostics)} diagnostic(s) in {rel} ({check.server}):"
        return ToolResult("\n".join([head, *lines]), notices=notices)
