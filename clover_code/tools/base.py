"""What a tool is: a name, a pydantic argument model, a kind, and ``run``.

The agent validates the model's arguments against ``Args`` before anything
runs; a tool raises ``ToolError`` (or returns ``ToolResult(is_error=True)``)
for failures the model should see and correct.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from pydantic import BaseModel

from clover_code.engine.base import ToolSpec

if TYPE_CHECKING:
    from clover_code.tools.fileio import FileAccess
    from clover_code.tools.sandbox.base import Sandbox
    from clover_code.tools.workspace import Workspace

ToolKind = Literal["read", "search", "edit", "execute", "other"]
"""What a call can do; approval policies decide by kind."""


@dataclass(slots=True)
class ToolResult:
    """What a call returns: text for the model, and details for front ends.

    ``display`` holds structured extras a front end may render (``diff`` for
    edits, ``exit_code`` and ``duration`` for commands, ``path``).
    """

    text: str
    is_error: bool = False
    display: dict[str, Any] = field(default_factory=dict)


def _local_files() -> FileAccess:
    from clover_code.tools.fileio import LocalFiles

    return LocalFiles()


@dataclass(slots=True)
class ToolContext:
    """What tools act on. ``on_output`` receives live command output; ``files``
    is how the file tools read and write (the disk, or an editor's buffers)."""

    workspace: Workspace
    sandbox: Sandbox | None = None
    shell_timeout: float = 120.0
    output_limit: int = 30_000
    on_output: Callable[[str], None] | None = None
    files: FileAccess = field(default_factory=_local_files)
    read_roots: list[Path] = field(default_factory=list)
    """Folders outside the workspace that read_file may read (skills loaded this
    session); shared by every copy of the context, so a loaded skill stays readable."""


class Tool(ABC):
    """Base of every tool. Subclasses set the class attributes and ``run``."""

    name: ClassVar[str]
    description: ClassVar[str]
    kind: ClassVar[ToolKind]
    Args: ClassVar[type[BaseModel]]

    def spec(self) -> ToolSpec:
        """The JSON-schema description sent to the model."""
        schema = self.Args.model_json_schema()
        schema.pop("title", None)
        for prop in schema.get("properties", {}).values():
            prop.pop("title", None)
        return ToolSpec(self.name, self.description, schema)

    def summary(self, args: BaseModel) -> str:
        """A short line naming the key arguments, for cards and logs."""
        first = next(iter(args.model_dump().values()), "")
        return str(first)[:120]

    @abstractmethod
    async def run(self, args: Any, ctx: ToolContext) -> ToolResult:
        """Carry out a validated call."""
