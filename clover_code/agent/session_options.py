"""How a front end wants its session opened: ``SessionOptions``, given to ``open_session``.

Front ends import it from ``clover_code.agent.open``, the one interface they reach
the core through.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from clover_code import protocol as p
from clover_code.agent.engines import Engines
from clover_code.agent.permissions.approval import Approver
from clover_code.config.sections import HookEvent
from clover_code.config.settings import ApprovalMode
from clover_code.engine.base import Backend
from clover_code.tools.base import Tool
from clover_code.tools.fileio import FileAccess
from clover_code.tools.sandbox.base import Sandbox

if TYPE_CHECKING:
    from clover_code.agent.extensions.hook_functions import HookFunction


@dataclass(frozen=True, kw_only=True)
class SessionOptions:
    """How a front end wants its session opened; only ``emit`` is required."""

    emit: p.Emit
    """Where the session's events go."""
    approver: Approver | None = None
    """Who answers approval requests; None: the front end answers the
    ``ApprovalRequested`` events with ``ApprovalDecision`` ops (the app)."""
    approval_mode: ApprovalMode = "ask"
    resume: Path | None = None
    """The transcript of a session to continue."""
    deadline: float | None = None
    """The loop-clock time the session's turns must end by."""
    files: FileAccess | None = None
    """How the file tools read and write (default: the local disk; ACP: the editor's
    buffers)."""
    backend: Backend | None = None
    """An engine the caller opened, and closes if the start fails; None: the one
    ``settings`` choose is opened for the session (and released if the start fails)."""
    engines: Engines | None = None
    """The process's loaded local engines: the session borrows one instead of
    loading the checkpoint again."""
    loading: Callable[[str], None] | None = None
    """Hears that a local checkpoint is loading (and what it says once loaded)."""
    engine_notices: bool = False
    """Without ``loading``, what a local engine says once it is loaded (its decoder
    choice) is still said, as notices."""
    confidence_notice: bool = False
    """The front end's output carries fill confidences: a warning says once when the
    engine reports none (the app says it itself, when its confidence view is on)."""
    strict_sandbox: bool = False
    """A ``docker`` or ``bwrap`` sandbox asked for explicitly is opened before the
    engine, and ``SandboxUnavailable`` (exit 3) is raised when it cannot run,
    instead of going on without a shell tool."""
    terminal: Sandbox | None = None
    """Replaces the sandbox (ACP's editor terminal); ``terminal_notice`` is said."""
    terminal_notice: str | None = None
    tools: Sequence[Tool[Any]] = ()
    """The front end's own tools, offered beside the built-in ones (an embedding
    program's Python functions); approvals and rules apply to them by their kind."""
    hooks: Mapping[HookEvent, Sequence[HookFunction]] = field(default_factory=dict)
    """The front end's own hooks (Python functions), run after the configured ones."""
    wait_for_background: bool = False
    """No turn ends with a final answer while a background child agent still runs: the
    turn waits for it and the model hears its report first (headless)."""
