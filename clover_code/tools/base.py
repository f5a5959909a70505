"""What a tool is: a name, a pydantic argument model, a kind, and ``run``.

``Tool`` is generic over its argument model (``class ShellTool(Tool[ShellArgs])``),
so ``run`` and ``summary`` receive that model, typed; a collection of different
tools is a ``Sequence[Tool[Any]]``.

The agent screens the model's raw arguments (``screen``: hostile values,
size caps, unknown names) and then validates them against ``Args`` before
anything runs; a tool raises ``ToolError`` (or returns ``ToolResult(is_error=True)``)
for failures the model should see and correct.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar, Generic, Literal, TypeVar

from pydantic import BaseModel

from clover_code.engine.base import ToolSpec
from clover_code.protocol import ToolDisplay
from clover_code.tools.arguments import TEXT_LIMIT, Screened, screen_arguments

if TYPE_CHECKING:
    from clover_code.tools.fileio import FileAccess
    from clover_code.tools.jobs import JobTable
    from clover_code.tools.lsp.manager import LanguageServers
    from clover_code.tools.sandbox.base import Sandbox
    from clover_code.tools.workspace import Workspace

ToolKind = Literal["read", "search", "edit", "execute", "fetch", "other"]
"""What a call can do; approval policies decide by kind (``fetch``: network egress)."""


@dataclass(slots=True)
class ToolResult:
    """What a call returns: text for the model, and details for front ends.

    ``display`` holds the typed details a front end may render (the diff of
    an edit, the exit code of a command; see ``protocol.ToolDisplay``).
    """

    text: str
    is_error: bool = False
    display: ToolDisplay | None = None
    notices: list[str] = field(default_factory=list)
    """Warnings for the user (each becomes a notice event), besides the text."""


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
    call_id: str | None = None
    """The id of the call being run (set per call by the dispatcher)."""
    allowed_tools: frozenset[str] | None = None
    """The only tools the running turn allows (a custom command's; None: every tool),
    set per call by the dispatcher: a child agent the call starts gets no others."""
    jobs: JobTable | None = None
    """The session's background jobs (None: no shell tool); shared by every copy of the
    context, so child agents see and stop the same jobs."""
    diagnostics: LanguageServers | None = None
    """The session's language servers: the edit tools add the changed files'
    diagnostics to their results (None: no language servers)."""


ArgsT = TypeVar("ArgsT", bound=BaseModel)
"""A tool's argument model."""


class Tool(ABC, Generic[ArgsT]):
    """Base of every tool. Subclasses set the class attributes and ``run``."""

    name: ClassVar[str]
    description: ClassVar[str]
    kind: ClassVar[ToolKind]
    Args: type[ArgsT]
    """The model a call's arguments are validated into (set on the class)."""
    argument_limits: ClassVar[Mapping[str, int]] = {}
    """Size caps in bytes for string arguments, by name (see ``tools.arguments``)."""
    default_argument_limit: ClassVar[int] = TEXT_LIMIT
    """The cap for string arguments not named in ``argument_limits``."""
    concurrent: ClassVar[bool] = False
    """Calls of this tool may run at the same time as their neighbours in one
    response (read and search tools always may)."""
    written_arguments: ClassVar[frozenset[str]] = frozenset()
    """For an edit tool: the arguments holding the text it writes into files, where the
    confidence view looks for the lines its diff adds among the tokens the model wrote
    (empty: every argument)."""
    runs_on_host: ClassVar[bool] = False
    """Its calls run in clover-code's own process on the host (a function of the
    program that embeds the agent), never in the sandbox: a contained sandbox does
    not make them safe, so sandbox-auto asks for an ``execute`` one as auto-edit does."""

    def screen(self, arguments: object) -> Screened:
        """Check raw arguments for hostile values before ``Args`` validates them."""
        known: set[str] | None = None
        if self.Args.model_config.get("extra") != "allow":
            known = set()
            for name, info in self.Args.model_fields.items():
                known.add(name)
                if info.alias:
                    known.add(info.alias)
        return screen_arguments(
            arguments,
            limits=self.argument_limits,
            default_limit=self.default_argument_limit,
            known=known,
        )

    def spec(self) -> ToolSpec:
        """The JSON-schema description sent to the model (kept between runs:
        ``schema_cache``)."""
        from clover_code.tools.schema_cache import parameters

        return ToolSpec(self.name, self.description, parameters(self.Args))

    def summary(self, args: ArgsT) -> str:
        """A short line naming the key arguments, for cards and logs."""
        first = next(iter(args.model_dump().values()), "")
        return str(first)[:120]

    @abstractmethod
    async def run(self, args: ArgsT, ctx: ToolContext) -> ToolResult:
        """Carry out a validated call."""
