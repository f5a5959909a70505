"""``CloverAgent``: the ACP ``Agent`` the SDK dispatches requests to.

Capabilities are advertised as they are: ``session/load`` and
``session/list`` yes (transcripts are replayed and listed), embedded
context yes (inlined @-mentions), images yes (a model that takes none gets
the text alone, and a notice says so), audio no, MCP servers over HTTP/SSE
no. The model is a session config option (category ``model``): the editor
lists it with each session and switches it with ``session/set_config_option``.
Every failure a client can cause is a JSON-RPC error carrying one sentence;
unknown methods are the SDK's "method not found".
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
from pathlib import Path
from typing import Any

from acp import PROTOCOL_VERSION, Client, RequestError
from acp.schema import (
    AcpMcpServer,
    AgentCapabilities,
    ClientCapabilities,
    HttpMcpServer,
    Implementation,
    InitializeResponse,
    ListSessionsResponse,
    LoadSessionResponse,
    McpCapabilities,
    McpServerStdio,
    NewSessionResponse,
    PromptCapabilities,
    PromptResponse,
    SessionCapabilities,
    SessionListCapabilities,
    SetSessionConfigOptionResponse,
    SetSessionModeResponse,
    SseMcpServer,
)
from pydantic import ValidationError

from clover_code import __version__
from clover_code.acp.bridge import MODEL_OPTION, MODES, LiveSession
from clover_code.acp.content import PromptBlock, prompt_input
from clover_code.acp.sessions import list_sessions
from clover_code.agent.engines import Engines
from clover_code.agent.open import load
from clover_code.config.load import load_settings
from clover_code.config.settings import McpServerConfig, Settings
from clover_code.errors import CloverError
from clover_code.fs.workspace_root import find_root

__all__ = ["CloverAgent"]

log = logging.getLogger("clover_code.acp")

McpServer = HttpMcpServer | SseMcpServer | AcpMcpServer | McpServerStdio

_SESSION_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")
_INVALID_PARAMS = -32602
_INTERNAL = -32603
_NOT_FOUND = -32002
_CLOSE_TIMEOUT = 10.0


def _error(code: int, message: str) -> RequestError:
    return RequestError(code, message)


class CloverAgent:
    """Serves ACP sessions; ``cli`` holds the settings given on the command line."""

    def __init__(
        self, cli: dict[str, Any], *, terminal: bool = False, trust_project: bool = False
    ) -> None:
        self._cli = cli
        self._trust_project = trust_project
        self._want_terminal = terminal
        self._client: Client | None = None
        self._capabilities = ClientCapabilities()
        self._sessions: dict[str, LiveSession] = {}
        # A local checkpoint is loaded once and lent to every session using it.
        self._engines = Engines()

    def on_connect(self, conn: Client) -> None:
        """The SDK hands over the connection to the editor."""
        self._client = conn

    # ------------------------------------------------------------ lifecycle

    async def initialize(
        self,
        protocol_version: int,
        client_capabilities: ClientCapabilities | None = None,
        client_info: Implementation | None = None,
        **kwargs: Any,
    ) -> InitializeResponse:
        """Agree on the protocol version and say what this agent can do."""
        self._capabilities = client_capabilities or ClientCapabilities()
        if self._want_terminal and not self._capabilities.terminal:
            log.warning("the editor offers no terminal; shell commands use the sandbox instead.")
        return InitializeResponse(
            protocol_version=PROTOCOL_VERSION,
            agent_capabilities=AgentCapabilities(
                load_session=True,
                session_capabilities=SessionCapabilities(list=SessionListCapabilities()),
                prompt_capabilities=PromptCapabilities(
                    image=True, audio=False, embedded_context=True
                ),
                mcp_capabilities=McpCapabilities(http=True, sse=True),
            ),
            agent_info=Implementation(name="clover-code", title="Clover Code", version=__version__),
            auth_methods=[],
        )

    async def new_session(
        self,
        cwd: str,
        additional_directories: list[str] | None = None,
        mcp_servers: list[McpServer] | None = None,
        **kwargs: Any,
    ) -> NewSessionResponse:
        """Start a session in ``cwd`` (its git top level becomes the workspace)."""
        root = _workspace(cwd)
        settings = _with_client_mcp(self._settings(root), mcp_servers)
        live = await self._open(root, settings, resume=None)
        return NewSessionResponse(
            session_id=live.id, modes=live.modes(), config_options=await live.config_options()
        )

    async def load_session(
        self,
        cwd: str,
        session_id: str,
        mcp_servers: list[McpServer] | None = None,
        additional_directories: list[str] | None = None,
        **kwargs: Any,
    ) -> LoadSessionResponse:
        """Reopen a stored session and replay it to the editor before answering."""
        root = _workspace(cwd)
        settings = _with_client_mcp(self._settings(root), mcp_servers)
        directory = settings.resolved_sessions_dir()
        path = directory / f"{session_id}.jsonl"
        if not _SESSION_ID.fullmatch(session_id) or not path.is_file():
            raise _error(
                _NOT_FOUND,
                f"there is no saved session '{session_id}' in {directory}; "
                "start a new one with session/new.",
            )
        running = self._sessions.pop(session_id, None)
        if running is not None:
            await running.close()
        try:
            loaded = load(path)
        except CloverError as exc:
            raise _error(_INTERNAL, str(exc)) from None
        live = await self._open(root, settings, resume=path)
        await live.replay(loaded)
        return LoadSessionResponse(modes=live.modes(), config_options=await live.config_options())

    async def list_sessions(
        self, cwd: str | None = None, cursor: str | None = None, **kwargs: Any
    ) -> ListSessionsResponse:
        """Stored sessions (of the workspace of ``cwd`` when given), newest first."""
        root = _workspace(cwd) if cwd is not None else find_root(Path.cwd())[0]
        directory = self._settings(root).resolved_sessions_dir()
        where = str(root) if cwd is not None else None
        return await asyncio.to_thread(list_sessions, directory, where, cursor)

    async def set_session_mode(
        self, session_id: str, mode_id: str, **kwargs: Any
    ) -> SetSessionModeResponse:
        """Switch the session's approval mode."""
        live = self._live(session_id)
        if mode_id not in MODES:
            known = ", ".join(MODES)
            raise _error(_INVALID_PARAMS, f"there is no mode '{mode_id}'; use one of {known}.")
        refused = live.session.settings.managed.mode_change_refusal(mode_id, live.mode)
        if refused is not None:
            raise _error(_INVALID_PARAMS, refused)
        await live.set_mode(mode_id)
        return SetSessionModeResponse()

    async def set_config_option(
        self, config_id: str, session_id: str, value: str | bool, **kwargs: Any
    ) -> SetSessionConfigOptionResponse:
        """Set a session config option: the model (the next request goes to it)."""
        live = self._live(session_id)
        if config_id != MODEL_OPTION:
            raise _error(
                _INVALID_PARAMS,
                f"there is no config option '{config_id}'; the one option is '{MODEL_OPTION}'.",
            )
        if not isinstance(value, str) or not value:
            raise _error(_INVALID_PARAMS, "the model option takes a model's name; send one.")
        await live.set_model(value)
        return SetSessionConfigOptionResponse(config_options=await live.config_options())

    async def prompt(
        self, session_id: str, prompt: list[PromptBlock], **kwargs: Any
    ) -> PromptResponse:
        """Run one turn of the session on the user's prompt (its text and images)."""
        live = self._live(session_id)
        return await live.prompt(*prompt_input(prompt, live.root))

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        """Stop the session's running turn (a notification: no reply)."""
        live = self._sessions.get(session_id)
        if live is None:
            log.warning("session/cancel for unknown session %r ignored.", session_id)
            return
        await live.cancel()

    async def close(self) -> None:
        """Close every session (turns end as interrupted; transcripts are complete)."""
        sessions = list(self._sessions.values())
        self._sessions.clear()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(
                asyncio.gather(*(s.close() for s in sessions), return_exceptions=True),
                _CLOSE_TIMEOUT,
            )
        await self._engines.close()

    # ------------------------------------------------------------ helpers

    def _live(self, session_id: str) -> LiveSession:
        live = self._sessions.get(session_id)
        if live is None:
            raise _error(
                _INVALID_PARAMS,
                f"there is no open session '{session_id}'; "
                "create one with session/new or reopen it with session/load.",
            )
        return live

    def _settings(self, root: Path) -> Settings:
        try:
            return load_settings(self._cli, repo_root=root, trust_project=self._trust_project)
        except CloverError as exc:
            raise _error(_INTERNAL, str(exc)) from None

    async def _open(self, root: Path, settings: Settings, *, resume: Path | None) -> LiveSession:
        if self._client is None:
            raise _error(_INTERNAL, "the connection to the editor is not ready yet.")
        try:
            # The factory closes what it opened (engine, sandbox, MCP) when a step fails.
            live = await LiveSession.open(
                self._client,
                self._capabilities,
                settings,
                root,
                engines=self._engines,
                terminal=self._want_terminal and bool(self._capabilities.terminal),
                mode=settings.approval_or("ask"),
                resume=resume,
                log=log.warning,
            )
        except CloverError as exc:
            raise _error(_INTERNAL, str(exc)) from None
        self._sessions[live.id] = live
        return live


def _workspace(cwd: str) -> Path:
    path = Path(cwd)
    if not path.is_absolute():
        raise _error(_INVALID_PARAMS, f"cwd '{cwd}' is not an absolute path; send one.")
    if not path.is_dir():
        raise _error(_INVALID_PARAMS, f"cwd '{cwd}' is not a directory.")
    return find_root(path)[0]


def _with_client_mcp(settings: Settings, servers: list[McpServer] | None) -> Settings:
    """The settings plus the editor's MCP servers, stdio and HTTP (the editor's own
    config, so trusted like the user's settings)."""
    extra: dict[str, McpServerConfig] = {}
    for server in servers or ():
        if isinstance(server, McpServerStdio):
            extra[server.name] = McpServerConfig(
                command=server.command,
                args=list(server.args),
                env={var.name: var.value for var in server.env},
            )
        elif isinstance(server, HttpMcpServer | SseMcpServer):
            try:
                extra[server.name] = McpServerConfig(
                    type="sse" if isinstance(server, SseMcpServer) else "http",
                    url=server.url,
                    headers={header.name: header.value for header in server.headers},
                )
            except ValidationError:
                log.warning("MCP server '%s' has a bad url %r; skipped.", server.name, server.url)
        else:
            log.warning("MCP server '%s' uses a transport we do not speak; skipped.", server.name)
    if not extra:
        return settings
    return settings.model_copy(update={"mcp_servers": {**settings.mcp_servers, **extra}})
