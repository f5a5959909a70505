"""Approval modes: which tool calls run at once, which ask, which are refused.

| mode         | read/search | edit  | execute          | fetch |
|--------------|-------------|-------|------------------|-------|
| read-only    | run         | deny  | deny             | ask   |
| plan         | run         | deny  | deny             | deny  |
| ask          | run         | ask   | ask              | ask   |
| auto-edit    | run         | run   | ask              | ask   |
| sandbox-auto | run         | run   | run if contained | ask   |
| full-auto    | run         | run   | run              | run   |

``sandbox-auto`` runs a command without asking only when the sandbox it runs
in is contained (Docker or bubblewrap without network: ``Sandbox.contained``);
on the host, in an editor's terminal or with the network on it is auto-edit.

``fetch`` (web_fetch, web_search) is network egress: what the agent sends out
(a URL can carry workspace contents) is not undone by any checkpoint, so it
asks in every mode but full-auto unless a domain allow rule matches (plan mode
refuses it).

plan mode also offers no tool but the read/search ones and the todo list
(``agent.plan``). "ask" goes to an ``Approver``: the app shows a modal;
headless mode cannot ask, so its approver refuses and says which flag would
allow the call.
"""

from __future__ import annotations

import asyncio
import secrets
import shlex
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, Protocol

from clover_code import protocol as p
from clover_code.config.settings import ApprovalMode
from clover_code.protocol.confidence import EditConfidence
from clover_code.tools.base import ToolKind

if TYPE_CHECKING:
    from clover_code.agent.permissions.edit_preview import EditPreview

Verdict = Literal["allow", "ask", "deny"]

_TABLE: dict[ApprovalMode, dict[str, Verdict]] = {
    "read-only": {"edit": "deny", "execute": "deny", "fetch": "ask"},
    "plan": {"edit": "deny", "execute": "deny", "fetch": "deny"},
    "ask": {"edit": "ask", "execute": "ask", "fetch": "ask"},
    "auto-edit": {"edit": "allow", "execute": "ask", "fetch": "ask"},
    "sandbox-auto": {"edit": "allow", "execute": "ask", "fetch": "ask"},
    "full-auto": {},
}
_CONTAINED_RUNS: frozenset[ApprovalMode] = frozenset({"sandbox-auto"})
"""Modes that run commands without asking when the sandbox contains them."""


def verdict(mode: ApprovalMode, kind: ToolKind, *, contained: bool = False) -> Verdict:
    """What ``mode`` says about a call of ``kind``; ``contained``: commands run in a
    sandbox without network that confines writes to the workspace."""
    if kind == "execute" and contained and mode in _CONTAINED_RUNS:
        return "allow"
    return _TABLE[mode].get(kind, "allow")


def command_prefix(command: str) -> str:
    """The prefix an "allow this command prefix" decision covers: the first word
    and, for tools with sub-commands (git, npm, cargo...), the second."""
    try:
        words = shlex.split(command)
    except ValueError:
        words = command.split()
    if not words:
        return ""
    if len(words) > 1 and not words[1].startswith("-") and words[0] in SUBCOMMAND_TOOLS:
        return f"{words[0]} {words[1]}"
    return words[0]


SUBCOMMAND_TOOLS = frozenset(
    {"git", "npm", "pnpm", "yarn", "cargo", "go", "uv", "pip", "poetry", "make", "docker"}
)
"""Programs whose second word (a sub-command) is part of a session rule's prefix."""


@dataclass(slots=True, frozen=True)
class Decision:
    """An approver's answer. ``feedback`` goes to the model with a denial."""

    allowed: bool
    remember_prefix: str | None = None
    feedback: str | None = None
    remember_edits: Literal["file", "all"] | None = None
    """Allow, for the rest of the session, edits to this file or all edits."""


@dataclass(slots=True, frozen=True)
class ApprovalRequest:
    """What an approver is asked about."""

    call_id: str
    name: str
    kind: ToolKind
    summary: str
    arguments: dict[str, object]
    prefix: str | None
    protected: bool = False
    """It writes one of the project's own config files (headless never does)."""
    diff: str | None = None
    """The unified diff an edit would make (approvers with ``shows_diff``)."""
    low_confidence: EditConfidence | None = None
    """The diff's changed tokens the model filled with low confidence."""
    preview: EditPreview | None = None
    """The same change as whole-file text, before and after."""
    mode_allows: bool = False
    """The approval mode alone would allow the call: a rule's check could not clear it."""


class Approver(Protocol):
    """Answers approval requests (a modal, an editor's dialog, or a refusal)."""

    @property
    def shows_diff(self) -> bool:
        """Whether edit requests carry the diff they would make (``ApprovalRequest.diff``):
        a dry run of the edit, which only an approver that shows it should cost."""
        ...

    async def request(self, request: ApprovalRequest) -> Decision:
        """Ask whoever can answer and return their decision."""
        ...


class RefuseApprover:
    """Headless mode: nobody can be asked, so every request is refused."""

    shows_diff = False
    """Nobody looks at a refused request's diff."""

    async def request(self, request: ApprovalRequest) -> Decision:
        if request.protected:
            return Decision(
                allowed=False,
                feedback=(
                    f"{request.name} would change the project's own clover-code config, "
                    "which headless mode never does in any approval mode; the user can "
                    "edit that file by hand."
                ),
            )
        if request.kind == "fetch":
            return Decision(
                allowed=False,
                feedback=(
                    f"{request.name} needs approval, which headless mode cannot ask for; "
                    "the user can allow the host with [permissions.allow] "
                    f'{request.name} = ["HOST"] or rerun with --approval full-auto.'
                ),
            )
        if request.mode_allows:
            # A looser mode would not help: the rules, not the mode, hold the call back.
            return Decision(
                allowed=False,
                feedback=(
                    f"{request.name} needs approval, which headless mode cannot ask for, "
                    "because a deny rule exists and this call cannot be checked against it; "
                    "the user can run it by hand or rewrite it so that it can be checked."
                ),
            )
        flag = "full-auto" if request.kind == "execute" else "auto-edit"
        return Decision(
            allowed=False,
            feedback=(
                f"{request.name} needs approval, which headless mode cannot ask for; "
                f"the user can rerun with --approval {flag} to allow it."
            ),
        )


_EDIT_SCOPES: dict[str, Literal["file", "all"]] = {"allow_file": "file", "allow_edits": "all"}


class QueueApprover:
    """Asks through the event stream and waits for an ``ApprovalDecision`` op."""

    shows_diff = True
    """Edit requests carry the diff they would make (``ApprovalRequested.diff``)."""

    def __init__(self, emit: p.Emit) -> None:
        self._emit = emit
        self._pending: dict[str, asyncio.Future[p.ApprovalDecision]] = {}

    async def request(self, request: ApprovalRequest) -> Decision:
        request_id = secrets.token_hex(4)
        future: asyncio.Future[p.ApprovalDecision] = asyncio.get_running_loop().create_future()
        self._pending[request_id] = future
        self._emit(
            p.ApprovalRequested(
                request_id=request_id,
                call_id=request.call_id,
                name=request.name,
                kind=request.kind,
                summary=request.summary,
                arguments=request.arguments,
                prefix=request.prefix,
                diff=request.diff,
                low_confidence=request.low_confidence,
            )
        )
        try:
            answer = await future
        finally:
            self._pending.pop(request_id, None)
        return Decision(
            allowed=answer.decision != "deny",
            remember_prefix=request.prefix if answer.decision == "allow_prefix" else None,
            feedback=answer.feedback,
            remember_edits=_EDIT_SCOPES.get(answer.decision),
        )

    def resolve(self, decision: p.ApprovalDecision) -> bool:
        """Hand a decision to the waiting request; False if none waits under that id."""
        future = self._pending.get(decision.request_id)
        if future is None or future.done():
            return False
        future.set_result(decision)
        return True
