"""What a finished tool call shows a front end: one typed model per kind of result.

Part of the protocol (``clover_code.protocol`` re-exports every name here,
and front ends use them from there): a tool returns one of these in
``ToolResult.display``, the agent passes it on in ``ToolCallFinished.display``,
and front ends read its attributes, choosing by type (``isinstance``) or by
the ``kind`` field that tags it in JSON.

``read_display`` also reads the untagged dictionaries that earlier versions
wrote into transcripts, so old sessions still load and replay.

This module imports nothing else of clover-code.
"""

# Annotations are objects here, not text (no ``from __future__ import annotations``):
# pydantic reads every field's, and text would be compiled and evaluated at each start.

from collections.abc import Mapping
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

__all__ = [
    "DISPLAY_ADAPTER",
    "BackgroundTask",
    "CommandRun",
    "Diagnostic",
    "FileEdit",
    "FileRead",
    "JobReport",
    "JobState",
    "Listing",
    "McpCall",
    "PatchApplied",
    "RepoMapBuilt",
    "SearchResult",
    "SkillLoaded",
    "SubagentRun",
    "TodoItem",
    "TodoList",
    "ToolDisplay",
    "WebPage",
    "WebSearch",
    "read_display",
]


class _Display(BaseModel):
    # Made ready at first use, like the ops and events (see ``base``).
    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)


class TodoItem(_Display):
    """One entry of the model's checklist."""

    text: str
    status: Literal["pending", "in_progress", "done"] = "pending"


class FileRead(_Display):
    """``read_file``: which lines of which file the model read."""

    kind: Literal["file_read"] = "file_read"
    path: str
    """Relative to the workspace root."""
    start: int | None = None
    """The first line shown (1-based); None for an empty file."""
    end: int | None = None
    """The last line shown; None for an empty file."""
    total_lines: int | None = None
    """Lines in the file; None when it was too large to count."""


class Diagnostic(_Display):
    """A problem a language server reported in a file the call changed."""

    path: str
    """Relative to the workspace root."""
    line: int
    """1-based."""
    column: int
    """1-based, in UTF-16 code units as the server counts them."""
    severity: Literal["error", "warning"]
    message: str
    source: str = ""
    """Who found it, e.g. ``basedpyright`` or ``ts``."""
    code: str = ""
    """The rule or error code, e.g. ``reportAttributeAccessIssue`` or ``2322``."""


class FileEdit(_Display):
    """``edit_file`` / ``write_file``: the change made to one file."""

    kind: Literal["file_edit"] = "file_edit"
    path: str
    """Relative to the workspace root."""
    diff: str
    """Unified diff with context; empty when the file did not change."""
    created: bool = False
    """Whether the file did not exist before."""
    replacements: int | None = None
    """``edit_file``: how many occurrences were replaced."""
    diagnostics: list[Diagnostic] = Field(default_factory=list)
    """What the file's language server reported after the change (``lsp_severity``)."""


class PatchApplied(_Display):
    """``apply_patch``: the changes made to several files at once."""

    kind: Literal["patch"] = "patch"
    diff: str
    """One unified diff over every file the patch touched."""
    paths: list[str]
    """The files touched, relative to the workspace root."""
    diagnostics: list[Diagnostic] = Field(default_factory=list)
    """What the files' language servers reported after the change (``lsp_severity``)."""


class CommandRun(_Display):
    """``shell``: how a command ended."""

    kind: Literal["command"] = "command"
    command: str
    description: str | None = None
    """What the model said the command does."""
    exit_code: int | None
    """None when the command was killed."""
    duration: float = 0.0
    timed_out: bool = False
    truncated: bool = False
    """Whether the output the model saw was cut."""
    sandbox: str = ""
    """Which sandbox ran it (``docker``, ``bubblewrap``, ``none``, ...)."""


JobState = Literal["running", "exited", "stopped", "lost"]
"""Where a background job stands: still running, ended by itself, stopped (by the model,
the user, an interrupt or the session's end), or lost with its sandbox."""


class JobReport(_Display):
    """``shell`` with ``background: true``, ``job_output``, ``job_stop``: a background
    job as the call left it."""

    kind: Literal["job"] = "job"
    job_id: str
    """The id the job tools take (``1``, ``2``...)."""
    command: str
    state: JobState
    exit_code: int | None = None
    """Its exit code once it exited by itself."""
    sandbox: str = ""
    """Which sandbox runs it."""


class SearchResult(_Display):
    """``grep``: how much a search found."""

    kind: Literal["search"] = "search"
    path: str
    """Where the search started, relative to the workspace root."""
    matches: int
    files: int
    backend: str
    """``rg`` or ``python``."""


class Listing(_Display):
    """``list_files`` / ``glob``: how many entries a listing found."""

    kind: Literal["listing"] = "listing"
    path: str
    """The directory listed, relative to the workspace root."""
    count: int
    capped: bool = False
    """Whether entries were left out (too many)."""


class McpCall(_Display):
    """A tool of an MCP server: which one answered."""

    kind: Literal["mcp"] = "mcp"
    server: str
    tool: str
    """The tool's name on its server."""


class TodoList(_Display):
    """``todo``: the model's whole checklist after the call."""

    kind: Literal["todo"] = "todo"
    todo: list[TodoItem]


class RepoMapBuilt(_Display):
    """``repo_map``: what the map covered."""

    kind: Literal["repo_map"] = "repo_map"
    files: int
    parsed: int
    notes: list[str] = Field(default_factory=list)


class SkillLoaded(_Display):
    """``skill``: which skill the model loaded."""

    kind: Literal["skill"] = "skill"
    skill: str
    folder: str
    """The skill's folder: relative to the workspace root when inside it."""


TASK_TOOL = "task"
"""The tool that hands work to a child agent (its display is ``SubagentRun``)."""


class SubagentRun(_Display):
    """``task``: the child agent that ran, what it cost and what it changed."""

    kind: Literal["task"] = "task"
    call_id: str
    """The task call that started the child."""
    agent: str
    """Its agent definition, e.g. ``explore``."""
    tokens: int
    """Tokens the child generated over all its requests."""
    duration_s: float
    status: Literal["completed", "interrupted", "failed", "max_turns", "timeout", "max_cost"]
    """How the child's turn ended."""
    cost: float | None = 0.0
    """What its requests cost (see ``UsageReport.cost``); null when a model was unpriced."""
    changed_files: list[str] = Field(default_factory=list)
    """Files its edit tools changed, relative to the workspace root (in a worktree:
    every file its work changed there)."""
    task_id: str | None = None
    """A background child's id (``task-1``), which ``task_result`` and ``task_stop`` take."""
    isolation: Literal["shared", "worktree"] = "shared"
    """Where it worked: the parent's workspace, or a git worktree of its own."""
    conflicted_files: list[str] = Field(default_factory=list)
    """In a worktree: the files whose changes conflicted with the parent's, so none of
    its changes were applied."""
    kept_branch: str | None = None
    """In a worktree: the branch its unmerged work was kept on (None once merged)."""


class BackgroundTask(_Display):
    """``task`` with ``background``: the child started and runs on; its end is a
    ``BackgroundTaskFinished`` event."""

    kind: Literal["background_task"] = "background_task"
    task_id: str
    """The id the model gives ``task_result`` and ``task_stop``."""
    agent: str
    isolation: Literal["shared", "worktree"] = "shared"


class WebPage(_Display):
    """``web_fetch``: which page was read, or where it redirected."""

    kind: Literal["web_page"] = "web_page"
    url: str
    """The page's address after the redirects that were followed."""
    status: int
    content_type: str = ""
    truncated: bool = False
    """Whether the page was longer than the size cap and cut there."""
    redirect: str | None = None
    """A redirect to another host that was not followed (its target)."""


class WebSearch(_Display):
    """``web_search``: how many results came back."""

    kind: Literal["web_search"] = "web_search"
    query: str
    results: int


ToolDisplay = Annotated[
    FileRead
    | FileEdit
    | PatchApplied
    | CommandRun
    | JobReport
    | SearchResult
    | Listing
    | McpCall
    | TodoList
    | RepoMapBuilt
    | SkillLoaded
    | SubagentRun
    | BackgroundTask
    | WebPage
    | WebSearch,
    Field(discriminator="kind"),
]
"""The details of a tool result, tagged by ``kind``."""

DISPLAY_ADAPTER: TypeAdapter[ToolDisplay] = TypeAdapter(
    ToolDisplay, config=ConfigDict(defer_build=True)
)

# Earlier versions wrote display as an untagged dictionary; these keys tell
# the shapes apart (checked in order: a patch has a diff too, but no path).
_LEGACY_KEYS: tuple[tuple[str, str], ...] = (
    ("todo", "todo"),
    ("exit_code", "command"),
    ("paths", "patch"),
    ("diff", "file_edit"),
    ("backend", "search"),
    ("server", "mcp"),
    ("parsed", "repo_map"),
    ("count", "listing"),
    ("total_lines", "file_read"),
    ("skill", "skill"),
)


def read_display(value: object) -> object:
    """``value`` as a ``ToolDisplay`` model where it is a dictionary (tagged, or in
    an earlier version's untagged form); None for a shape it cannot read.

    Anything else is returned as it is, for pydantic to validate.
    """
    if not isinstance(value, Mapping):
        return value
    raw = dict(value)
    if "kind" not in raw:
        kind = next((kind for key, kind in _LEGACY_KEYS if key in raw), None)
        if kind is None:
            return None
        raw["kind"] = kind
    try:
        return DISPLAY_ADAPTER.validate_python(raw)
    except ValidationError:
        return None  # another version's shape: the result text still tells the story
