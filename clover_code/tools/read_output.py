"""The ``read_output`` tool: read a saved long tool output in parts."""

from __future__ import annotations

from typing import ClassVar

from pydantic import BaseModel, ConfigDict, Field

from clover_code.errors import ToolError
from clover_code.tools.base import Tool, ToolContext, ToolKind, ToolResult
from clover_code.tools.spill import OutputSpill

__all__ = ["ReadOutputArgs", "ReadOutputTool"]

MAX_LINES = 2_000


class ReadOutputArgs(BaseModel):
    """Arguments of read_output."""

    model_config = ConfigDict(defer_build=True)
    """Built when a call is first validated (the schema is kept: ``schema_cache``)."""

    id: str = Field(description="The id named in the truncated output (the tool call's id).")
    offset: int = Field(1, ge=1, description="First line to read (1-based).")
    limit: int = Field(400, ge=1, le=MAX_LINES, description="How many lines to read.")


class ReadOutputTool(Tool[ReadOutputArgs]):
    """Reads the full text of a tool output that was cut to fit the context."""

    name: ClassVar[str] = "read_output"
    description: ClassVar[str] = (
        "Read part of a long tool output that was shortened to fit the context. The "
        "shortened output names its id; give a line offset and a number of lines."
    )
    kind: ClassVar[ToolKind] = "read"
    Args = ReadOutputArgs

    def __init__(self, spill: OutputSpill) -> None:
        self.spill = spill

    async def run(self, args: ReadOutputArgs, ctx: ToolContext) -> ToolResult:
        path = self.spill.saved.get(args.id)
        if path is None or not path.is_file():
            known = ", ".join(sorted(self.spill.saved)) or "none yet"
            raise ToolError(f"no saved output with id '{args.id}' (saved: {known}).")
        lines = path.read_text("utf-8", errors="replace").splitlines()
        start = args.offset - 1
        part = lines[start : start + args.limit]
        if not part:
            raise ToolError(f"output '{args.id}' has {len(lines)} lines; offset is past the end.")
        width = len(str(start + len(part)))
        body = "\n".join(f"{n:>{width}}\t{line}" for n, line in enumerate(part, start + 1))
        rest = len(lines) - start - len(part)
        more = (
            f"\n[{rest} more lines; continue with offset={start + len(part) + 1}]" if rest else ""
        )
        return ToolResult(text=body + more)
