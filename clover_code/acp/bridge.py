"""``LiveSession``: one ACP session, a clover ``Session`` wired to the editor.

It owns the session's event mapper and outbox, the approver and file access
that go through the editor, and (when chosen) the editor-terminal sandbox.
It talks to the core only through ``Session.run_turn`` and ``Op``s.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from pathlib import Path
from typing import cast, get_args

from acp import Client, RequestError
from acp.schema import (
    AvailableCommand,
    AvailableCommandInput,
    AvailableCommandsUpdate,
    ClientCapabilities,
    CurrentModeUpdate,
    PromptResponse,
    SessionConfigOptionSelect,
    SessionConfigSelectOption,
    SessionMode,
    SessionModeState,
    UnstructuredCommandInput,
)

from clover_code import protocol as p
from clover_code.acp.client import EditorApprover, EditorFiles, Outbox
from clover_code.acp.replay import replay_updates
from clover_code.acp.terminal import EditorTerminal
from clover_code.acp.updates import EventMapper, stop_reason
from clover_code.acp.waits import Waits
from clover_code.agent.engines import Engines
from clover_code.agent.open import (
    CustomCommand,
    LoadedSession,
    Session,
    SessionOptions,
    open_session,
    verdict,
)
from clover_code.config.settings import ApprovalMode, Settings
from clover_code.telemetry.spans import observed
from clover_code.tools.base import ToolKind

__all__ = ["MODEL_OPTION", "MODES", "LiveSession"]

MODEL_OPTION = "model"
"""The id of the session config option that chooses the model."""

MODES: dict[ApprovalMode, SessionMode] = {
    "read-only": SessionMode(
        id="read-only", name="Read only", description="Reads and searches; never edits or runs."
    ),
    "plan": SessionMode(
        id="plan", name="Plan", description="Explores and writes a plan; never edits or runs."
    ),
    "ask": SessionMode(id="ask", name="Ask", description="Asks before each edit and command."),
    "auto-edit": SessionMode(
        id="auto-edit", name="Auto edit", description="Edits files; asks before commands."
    ),
    "sandbox-auto": SessionMode(
        id="sandbox-auto",
        name="Sandbox auto",
        description="Edits files; runs commands without asking only in Docker or bubblewrap.",
    ),
    "full-auto": SessionMode(
        id="full-auto", name="Full auto", description="Edits and runs commands without asking."
    ),
}
"""The session modes offered to the editor: clover's approval modes."""

_TERMINAL_NOTICE = (
    "shell commands run in the editor's terminal (--terminal), directly on this machine: "
    "nothing isolates them from your files, network or credentials."
)
_CLOSE_TIMEOUT = 5.0
_TOOL_KINDS = frozenset(get_args(ToolKind))


def available_commands(commands: list[CustomCommand]) -> AvailableCommandsUpdate:
    """The custom commands, as the editor's slash-command menu shows them."""
    return AvailableCommandsUpdate(
        session_update="available_commands_update",
        available_commands=[
            AvailableCommand(
                name=c.name,
                description=c.description or f"custom command ({c.source})",
                input=AvailableCommandInput(root=UnstructuredCommandInput(hint=c.argument_hint))
                if c.argument_hint
                else None,
            )
            for c in commands
        ],
    )


class LiveSession:
    """A clover session plus everything that links it to the editor."""

    def __init__(
        self,
        client: Client,
        capabilities: ClientCapabilities,
        root: Path,
        *,
        terminal: bool,
        output_limit: int,
        mode: ApprovalMode,
        log: Callable[[str], None],
        notify_after: float = 60.0,
    ) -> None:
        self.root = root
        self.waits = Waits(notify_after, self._notify)
        """A wait the editor's user leaves for ``notify_after`` s runs the Notification hooks."""
        self.mode: ApprovalMode = mode
        """The session's approval mode, as its events last said."""
        self.outbox = Outbox(client)
        fs = capabilities.fs
        self.files = EditorFiles(
            client,
            self.outbox,
            asyncio.get_running_loop(),
            read=bool(fs and fs.read_text_file),
            write=bool(fs and fs.write_text_file),
        )
        self.mapper = EventMapper(
            root, needs_approval=self._needs_approval, take_edit=self.files.take_edit, log=log
        )
        self.approver = EditorApprover(
            client,
            self.outbox,
            allow_edits=self._allow_edits,
            tool_call_id=self.mapper.acp_id,
            waits=self.waits,
        )
        self.terminal: EditorTerminal | None = None
        if terminal:
            self.terminal = EditorTerminal(
                client,
                self.outbox,
                root,
                output_limit=output_limit,
                on_terminal=self._on_terminal,
            )
        self._session: Session | None = None
        self._turn: asyncio.Task[p.TurnFinished] | None = None
        self._op_errors: dict[str, str | None] = {}
        """The error each op awaited here caused (None: none yet)."""

    @classmethod
    async def open(
        cls,
        client: Client,
        capabilities: ClientCapabilities,
        settings: Settings,
        root: Path,
        *,
        engines: Engines,
        terminal: bool,
        mode: ApprovalMode,
        resume: Path | None,
        log: Callable[[str], None],
    ) -> LiveSession:
        """Open (or resume) the clover session and start sending its updates."""
        live = cls(
            client,
            capabilities,
            root,
            terminal=terminal,
            output_limit=settings.output_limit,
            mode=mode,
            log=log,
            notify_after=settings.notify_after,
        )
        live._session = await open_session(
            settings,
            root,
            SessionOptions(
                emit=observed(live.emit, settings.managed.forced_telemetry),
                approver=live.approver,
                approval_mode=mode,
                resume=resume,
                engines=engines,
                terminal=live.terminal,
                terminal_notice=_TERMINAL_NOTICE,
                files=live.files,
                # What the engine cannot do (remask_below on a server that cannot), and
                # that it reports no fill confidences (the updates' metadata carries them).
                engine_notices=True,
                confidence_notice=True,
            ),
        )
        live.outbox.start(live._session.id)
        if live._session.commands:
            live.outbox.put(available_commands(live._session.commands))
        return live

    @property
    def session(self) -> Session:
        """The clover session (set once ``open`` returns)."""
        assert self._session is not None, "LiveSession.open sets the session"
        return self._session

    @property
    def id(self) -> str:
        """The session id, shared by ACP and the transcript."""
        return self.session.id

    def modes(self) -> SessionModeState:
        """The mode picker's state for the editor."""
        allowed = self.session.settings.managed.approval_modes()  # an administrator's limit
        return SessionModeState(
            current_mode_id=self.mode, available_modes=[MODES[m] for m in allowed]
        )

    async def config_options(self) -> list[SessionConfigOptionSelect]:
        """The session's config options for the editor: the model."""
        options, _ = await self.session.models()
        current = next((o.name for o in options if o.current), self.session.backend.model)
        return [
            SessionConfigOptionSelect(
                type="select",
                id=MODEL_OPTION,
                name="Model",
                category="model",
                description="The model the next request goes to.",
                current_value=current,
                options=[
                    SessionConfigSelectOption(
                        value=o.name, name=o.name, description=o.id if o.id != o.name else None
                    )
                    for o in options
                ],
            )
        ]

    async def set_model(self, name: str) -> None:
        """Switch the model (``session/set_config_option``); ``RequestError`` with the
        sentence saying why not."""
        op = p.SetModel(model=name)
        self._op_errors[op.id] = None
        try:
            await self.session.submit(op)
        finally:
            error = self._op_errors.pop(op.id, None)
        if error is not None:
            raise RequestError(-32602, error)

    def emit(self, event: p.Event) -> None:
        """The session's event callback: map and queue."""
        if isinstance(event, p.ErrorEvent) and event.op_id in self._op_errors:
            self._op_errors[event.op_id] = event.message
        if isinstance(event, p.ApprovalModeChanged):
            self.mode = event.mode
        for update in self.mapper.feed(event):
            self.outbox.put(update)

    async def prompt(self, text: str, images: tuple[p.ImageAttachment, ...] = ()) -> PromptResponse:
        """Run one turn and answer with its stop reason (an error reply if it failed)."""
        if self._turn is not None:
            raise RequestError(
                -32602, "a prompt is already running in this session; cancel it first."
            )
        self.waits.end("idle")
        turn = asyncio.create_task(self.session.run_turn(p.UserInput(text=text, images=images)))
        self._turn = turn
        try:
            finished = await turn
        finally:
            if turn.done():
                self._turn = None
        if finished.status != "interrupted":  # cancelled from the editor: the user is there
            ended = "finished" if finished.status == "completed" else f"stopped ({finished.status})"
            message = f"The turn {ended}; clover-code is waiting for your input."
            self.waits.start("idle", message, "idle_prompt")
        for update in self.mapper.flush():
            self.outbox.put(update)
        await self.outbox.drain()
        reason = stop_reason(finished.status, self.mapper.hit_token_limit)
        if reason is None:
            raise RequestError(-32603, self.mapper.last_error or "the turn failed.")
        return PromptResponse(stop_reason=reason)

    async def cancel(self) -> None:
        """Stop the running turn (the prompt answers ``cancelled``) and every background
        job (``session/cancel``), even between turns."""
        await self.session.submit(p.Interrupt())

    async def set_mode(self, mode: ApprovalMode) -> None:
        """Switch the approval mode (``session/set_mode``)."""
        await self.session.submit(p.SetApprovalMode(mode=mode))

    async def replay(self, loaded: LoadedSession) -> None:
        """Send the stored conversation to the editor (``session/load``)."""
        for update in replay_updates(loaded, self.root):
            self.outbox.put(update)
        await self.outbox.drain()

    async def close(self) -> None:
        """End the turn if one runs, close the session (transcript complete), stop sending."""
        self.waits.close()
        if self._session is not None:
            await self._session.close()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.outbox.drain(), _CLOSE_TIMEOUT)
        await self.outbox.close()

    # ------------------------------------------------------------ callbacks

    async def _notify(self, op: p.Notify) -> None:
        if self._session is not None:
            await self._session.submit(op)

    def _needs_approval(self, kind: str) -> bool:
        if self._session is None or kind not in _TOOL_KINDS:
            return False
        sandbox = self._session.sandbox
        contained = sandbox is not None and sandbox.contained
        return verdict(self.mode, cast(ToolKind, kind), contained=contained) == "ask"

    async def _allow_edits(self) -> None:
        await self.set_mode("auto-edit")
        if self.mode != "auto-edit":  # refused: above the administrator's max_approval
            return
        self.outbox.put(
            CurrentModeUpdate(session_update="current_mode_update", current_mode_id="auto-edit")
        )

    def _on_terminal(self, terminal_id: str) -> None:
        for update in self.mapper.attach_terminal(terminal_id):
            self.outbox.put(update)
