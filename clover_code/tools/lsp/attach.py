"""What the edit tools call: the changed files' diagnostics added to their result.

``with_diagnostics`` reads each changed file back (through the tools' file
access, so an editor's buffer is what the server sees), hands the texts to
the session's ``LanguageServers``, and adds what came back to the result:
a paragraph of text for the model, the items on the display for front
ends, and the servers' notices for the user. Without language servers, or
for a failed edit, the result is returned as it is.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from clover_code.protocol import FileEdit, PatchApplied
from clover_code.tools.base import ToolContext, ToolResult
from clover_code.tools.lsp.report import report_text

__all__ = ["read_text", "warm", "with_diagnostics"]


def read_text(ctx: ToolContext, path: Path) -> str | None:
    """The file's text as the tools see it; None when it is gone (or not text)."""
    try:
        with ctx.files.open_read(path) as handle:
            return handle.read().decode("utf-8")
    except (OSError, UnicodeDecodeError):
        return None


def warm(ctx: ToolContext, rel: str) -> None:
    """Start the server of ``rel``'s language in the background (a file was read: an edit
    may follow)."""
    if ctx.diagnostics is not None:
        ctx.diagnostics.warm(rel)


async def with_diagnostics(result: ToolResult, ctx: ToolContext) -> ToolResult:
    """``result`` with the diagnostics of the files its edit changed."""
    servers = ctx.diagnostics
    display = result.display
    if servers is None or result.is_error or not isinstance(display, FileEdit | PatchApplied):
        return result
    paths = [display.path] if isinstance(display, FileEdit) else display.paths
    if isinstance(display, FileEdit) and not display.diff:
        return result  # nothing changed
    wanted = [rel for rel in paths if servers.handles(rel)]
    if wanted:
        root = ctx.workspace.root
        texts = await asyncio.to_thread(lambda: [read_text(ctx, root / rel) for rel in wanted])
        checks = await servers.check(list(zip(wanted, texts, strict=True)))
        found = [d for check in checks for d in check.diagnostics]
        paragraph = report_text(checks)
        if paragraph:
            result.text += "\n\n" + paragraph
        if found:
            result.display = display.model_copy(update={"diagnostics": found})
    result.notices += servers.take_notices()
    return result
