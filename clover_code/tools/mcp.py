"""MCP client: MCP servers (stdio, streamable HTTP, SSE; see ``mcp_transport``),
their tools offered to the model as ours.

``McpManager`` starts the declared servers (``clover_code.tools.mcp_config``)
through the official ``mcp`` SDK, lists their tools and wraps each as a
``Tool`` named ``mcp__<server>__<tool>`` (so permission rules can name one
tool or, with a glob, a whole server). A tool is of kind ``read`` only when
the user's config vouches for it (``read_only``: names or globs, from the
``mcp_read_only`` setting); every other one is ``execute``, so the approval
modes ask before it runs and plan and read-only modes refuse it (an MCP tool
can do anything). A server's own ``readOnlyHint`` is a claim, not a
guarantee, and does not count.

Each server lives in a task of its own, so the manager can be started and
closed from different tasks (the SDK's connection must be entered and left
in one). A server that cannot start (a missing program, a crash, no answer
within its ``startup_timeout``) is reported as a notice and skipped; a call
that fails or exceeds ``call_timeout`` is a ``ToolError`` for the model.
The servers' stderr goes to a temporary file, never to the terminal; its
last line explains a failed start.
"""

from __future__ import annotations

import asyncio
import contextlib
import fnmatch
import hashlib
import importlib
import json
import re
import tempfile
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from types import TracebackType
from typing import IO, Any, ClassVar, Literal

import mcp.types as mcp_types
from mcp import Client
from pydantic import BaseModel, ConfigDict, model_validator

import clover_code
from clover_code.engine.base import ToolSpec
from clover_code.errors import ToolError
from clover_code.protocol import McpCall
from clover_code.tools.arguments import CONTENT_LIMIT
from clover_code.tools.base import Tool, ToolContext, ToolKind, ToolResult
from clover_code.tools.mcp_config import DeclaredServer
from clover_code.tools.mcp_transport import MissingVariable, describe, open_transport

__all__ = ["Approve", "McpArgs", "McpManager", "McpTool", "tool_name"]

Approve = Callable[[DeclaredServer], Awaitable[bool]]
"""Asks the user whether a project (``.mcp.json``) server may start."""

_MAX_NAME = 64  # what OpenAI-compatible servers accept for a function name
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")
_CLOSE_WAIT = 10.0

# jsonschema ships without type information; it is a dependency of ``mcp``.
_jsonschema: Any = importlib.import_module("jsonschema")


def tool_name(server: str, tool: str) -> str:
    """``mcp__server__tool`` with unsafe characters replaced, at most 64 characters."""
    name = f"mcp__{_UNSAFE.sub('_', server)}__{_UNSAFE.sub('_', tool)}"
    if len(name) <= _MAX_NAME:
        return name
    digest = hashlib.sha1(name.encode()).hexdigest()[:8]
    return f"{name[: _MAX_NAME - 9]}_{digest}"


class McpArgs(BaseModel):
    """Arguments of an MCP tool: any JSON object its input schema accepts."""

    model_config = ConfigDict(extra="allow")
    validator: ClassVar[Any] = None
    """A jsonschema validator for the tool's input schema (None: the server checks)."""

    @model_validator(mode="before")
    @classmethod
    def _check(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            raise ValueError("the arguments must be a JSON object")
        if cls.validator is not None:
            errors = sorted(cls.validator.iter_errors(data), key=lambda e: list(e.path))
            if errors:
                raise ValueError(
                    "; ".join(
                        f"{'.'.join(map(str, e.path)) or '(arguments)'}: {e.message}"
                        for e in errors[:5]
                    )
                )
        return data


class McpTool(Tool[McpArgs]):
    """One tool of one MCP server; subclasses are made per tool by ``McpManager``."""

    server: ClassVar[str]
    remote_name: ClassVar[str]
    schema: ClassVar[dict[str, Any]]
    # A server's arguments may be file contents, not only names and paths.
    default_argument_limit: ClassVar[int] = CONTENT_LIMIT
    # The server is a program on the host (stdio) or somewhere else (HTTP): never in
    # the sandbox, so a contained sandbox does not let sandbox-auto run its tools unasked.
    runs_on_host: ClassVar[bool] = True

    def __init__(self, connection: _Server, timeout: float) -> None:
        self._connection = connection
        self._timeout = timeout

    def spec(self) -> ToolSpec:
        """The server's own JSON schema, as the model should see it."""
        return ToolSpec(self.name, self.description, self.schema)

    async def run(self, args: McpArgs, ctx: ToolContext) -> ToolResult:
        """Call the tool on its server and turn the result into text."""
        arguments = args.model_dump()
        result = await self._connection.call(self.remote_name, arguments, self._timeout)
        text = _result_text(result)
        if len(text) > ctx.output_limit:
            half = ctx.output_limit // 2
            cut = len(text) - 2 * half
            text = f"{text[:half]}\n[... {cut} characters cut ...]\n{text[-half:]}"
        if result.is_error:
            return ToolResult(text=f"error: {text or 'the tool failed'}", is_error=True)
        return ToolResult(text=text, display=McpCall(server=self.server, tool=self.remote_name))


def _result_text(result: mcp_types.CallToolResult) -> str:
    parts: list[str] = []
    for block in result.content:
        if isinstance(block, mcp_types.TextContent):
            parts.append(block.text)
        elif isinstance(block, mcp_types.ImageContent | mcp_types.AudioContent):
            parts.append(f"[{block.type}: {block.mime_type}, {len(block.data) * 3 // 4} bytes]")
        elif isinstance(block, mcp_types.EmbeddedResource):
            res = block.resource
            if isinstance(res, mcp_types.TextResourceContents):
                parts.append(res.text)
            else:
                parts.append(f"[binary resource {res.uri}]")
        elif isinstance(block, mcp_types.ResourceLink):
            parts.append(f"[resource {block.uri}]")
    if not parts and result.structured_content is not None:
        parts.append(json.dumps(result.structured_content, ensure_ascii=False))
    return "\n".join(parts)


class _StartFailed(Exception):
    """A server did not come up; the message says why in a few words."""


class _Server:
    """One running server: a task holding its SDK connection until ``stop``."""

    def __init__(self, declared: DeclaredServer, root: Path) -> None:
        self.declared = declared
        self.name = declared.name
        self._root = root
        self._client: Client | None = None
        self._ready: asyncio.Future[list[mcp_types.Tool]] | None = None
        self._stop = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self.failure: str | None = None

    async def start(self) -> list[mcp_types.Tool]:
        """Start the server and return its tools; raises ``_StartFailed``."""
        self._ready = asyncio.get_running_loop().create_future()
        self._task = asyncio.create_task(self._run(self._ready), name=f"mcp-{self.name}")
        timeout = self.declared.config.startup_timeout
        try:
            return await asyncio.wait_for(asyncio.shield(self._ready), timeout)
        except TimeoutError:
            self._ready.cancel()
            await self.stop(wait=0.0)
            raise _StartFailed(f"it did not answer within {timeout:g} s") from None
        except asyncio.CancelledError:
            self._ready.cancel()
            self._task.cancel()  # the SDK still ends the process, in its shielded shutdown
            raise

    async def _run(self, ready: asyncio.Future[list[mcp_types.Tool]]) -> None:
        config = self.declared.config
        info = mcp_types.Implementation(name="clover-code", version=clover_code.__version__)
        with tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace") as errlog:
            try:
                transport = open_transport(self.name, config, self._root, errlog)
                async with Client(transport, client_info=info) as client:
                    tools = await _list_tools(client)
                    self._client = client
                    if not ready.done():
                        ready.set_result(tools)
                    await self._stop.wait()
            except Exception as exc:  # a third-party process: any failure is its failure
                reason = _reason(exc, describe(config), errlog)
                self.failure = reason
                if not ready.done():
                    ready.set_exception(_StartFailed(reason))
            finally:
                self._client = None

    async def call(
        self, tool: str, arguments: dict[str, Any], timeout: float
    ) -> mcp_types.CallToolResult:
        """Call one tool; failures become ``ToolError`` sentences."""
        client = self._client
        if client is None:
            why = f" ({self.failure})" if self.failure else ""
            raise ToolError(f"MCP server '{self.name}' is not running{why}.")
        try:
            async with asyncio.timeout(timeout):
                return await client.call_tool(tool, arguments)
        except TimeoutError:
            raise ToolError(
                f"MCP tool '{tool}' of server '{self.name}' did not answer within {timeout:g} s."
            ) from None
        except Exception as exc:  # the server's failure, reported to the model
            detail = str(exc).strip() or type(exc).__name__
            msg = f"MCP server '{self.name}' failed the call to '{tool}': {detail}."
            raise ToolError(msg) from None

    async def stop(self, wait: float = _CLOSE_WAIT) -> None:
        """Close the connection (the SDK ends the process); cancel it after ``wait`` s."""
        self._stop.set()
        task = self._task
        if task is None or task.done():
            return
        _, pending = await asyncio.wait({task}, timeout=wait) if wait > 0 else (set(), {task})
        if pending:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)


async def _list_tools(client: Client) -> list[mcp_types.Tool]:
    tools: list[mcp_types.Tool] = []
    cursor: str | None = None
    for _ in range(100):  # a server that pages forever cannot hang the start
        page = await client.list_tools(cursor=cursor)
        tools.extend(page.tools)
        cursor = page.next_cursor
        if cursor is None:
            break
    return tools


def _reason(exc: BaseException, command: str, errlog: IO[str]) -> str:
    """A few words on why a server failed, from the exception and its stderr."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    if isinstance(exc, MissingVariable):
        return f"it needs the environment variable {exc}, which is not set"
    if isinstance(exc, FileNotFoundError):
        return f"the program '{command}' was not found"
    if isinstance(exc, PermissionError):
        return f"the program '{command}' cannot be run (permission denied)"
    with contextlib.suppress(OSError, ValueError):
        errlog.seek(0)
        lines = [line.strip() for line in errlog.read()[-4000:].splitlines() if line.strip()]
        if lines:
            return f"it exited: {lines[-1][:200]}"
    return str(exc).strip() or type(exc).__name__


class McpManager:
    """The MCP servers of one session and the tools they offer.

    Use ``async with McpManager(servers, root=...) as mcp`` or call ``start``
    and ``aclose`` (from any task). ``tools`` is filled by ``start``.
    """

    def __init__(
        self,
        servers: Sequence[DeclaredServer],
        *,
        root: Path,
        call_timeout: float = 120.0,
        project_policy: Literal["ask", "trust", "ignore"] = "ask",
        approve: Approve | None = None,
        read_only: Sequence[str] = (),
    ) -> None:
        self._declared = list(servers)
        self._read_only = tuple(read_only)
        self._root = root
        self._timeout = call_timeout
        self._policy = project_policy
        self._approve = approve
        self._servers: list[_Server] = []
        self.tools: list[Tool[Any]] = []
        """The wrapped tools of every server that started, in declaration order."""
        self.notices: list[str] = []
        """What ``start`` had to report (servers skipped or not started)."""

    async def start(self) -> list[str]:
        """Start every declared server at once; returns notices (one sentence each)."""
        notices: list[str] = []
        chosen: list[DeclaredServer] = []
        for declared in self._declared:
            if declared.project and not declared.trusted and not await self._allowed(declared):
                notices.append(
                    f"MCP server '{declared.name}' of {declared.source} was not started; "
                    'set mcp_project = "trust" in your config to start project servers.'
                )
            else:
                chosen.append(declared)
        servers = [_Server(d, self._root) for d in chosen]
        results = await asyncio.gather(*(s.start() for s in servers), return_exceptions=True)
        taken: set[str] = set()
        for server, result in zip(servers, results, strict=True):
            if isinstance(result, BaseException):
                if not isinstance(result, _StartFailed):
                    raise result
                notices.append(f"MCP server '{server.name}' failed to start ({result}); skipped.")
                continue
            self._servers.append(server)
            for remote in result:
                name = tool_name(server.name, remote.name)
                if name in taken:
                    notices.append(f"MCP tool '{name}' is offered twice; the first one is used.")
                    continue
                taken.add(name)
                self.tools.append(self._wrap(server, remote, name))
        self.notices += notices
        return notices

    async def _allowed(self, declared: DeclaredServer) -> bool:
        if self._policy == "trust":
            return True
        if self._policy == "ask" and self._approve is not None:
            return await self._approve(declared)
        return False

    def _wrap(self, server: _Server, remote: mcp_types.Tool, name: str) -> McpTool:
        schema = dict(remote.input_schema) or {"type": "object", "properties": {}}
        validator = None
        with contextlib.suppress(Exception):  # a bad schema: let the server judge
            cls = _jsonschema.validators.validator_for(schema)
            cls.check_schema(schema)
            validator = cls(schema)
        args = type(f"{name}_Args", (McpArgs,), {"validator": validator})
        vouched = any(fnmatch.fnmatchcase(name, pattern) for pattern in self._read_only)
        kind: ToolKind = "read" if vouched else "execute"
        text = (remote.description or remote.title or remote.name).strip()[:2000]
        attrs = {
            "name": name,
            "description": f"{text} (tool '{remote.name}' of MCP server '{server.name}')",
            "kind": kind,
            "Args": args,
            "server": server.name,
            "remote_name": remote.name,
            "schema": schema,
        }
        tool_class: type[McpTool] = type(f"Mcp_{name}", (McpTool,), attrs)
        return tool_class(server, self._timeout)

    def describe(self) -> list[str]:
        """One line per running server with its tools, for /help."""
        lines = []
        for server in self._servers:
            names = [
                t.name for t in self.tools if isinstance(t, McpTool) and t.server == server.name
            ]
            lines.append(f"{server.name}: {', '.join(names) or 'no tools'}")
        return lines

    async def aclose(self) -> None:
        """Stop every server (each within a bounded wait)."""
        servers, self._servers = self._servers, []
        self.tools = []
        await asyncio.gather(*(s.stop() for s in servers))

    async def __aenter__(self) -> McpManager:
        """Start the servers; their notices are in ``notices``."""
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()
