"""The settings' structured sections: permission rules, MCP servers, hooks, language
servers, model prices.

Each is a table in the config files (``[permissions]``, ``[mcp_servers.NAME]``,
``[[hooks.EVENT]]``, ``[lsp.LANGUAGE]``, ``[pricing.MODEL]``) and a field of
``clover_code.config.settings.Settings``, which names them too.
"""

# Annotations are objects here, not text (no ``from __future__ import annotations``):
# pydantic reads every field's, and text would be compiled and evaluated at each start.

import re
from typing import Any, Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

__all__ = [
    "HookConfig",
    "HookEvent",
    "LspServerConfig",
    "McpServerConfig",
    "ModelPrice",
    "PermissionRules",
    "empty_list",
]


def empty_list() -> list[Any]:
    """A new empty list: the default factory of the models' list fields. Given ``list``
    itself, pydantic reads the builtin's signature from its text, which compiles the
    tokenizer's patterns (a few ms of every start)."""
    return []


class PermissionRules(BaseModel):
    """Allow and deny rules on top of the approval mode; deny beats allow.

    Keys are tool names (``shell``, ``write_file``, an MCP tool's name; a
    ``*`` glob may stand for part of a name) or ``edit`` (every file write,
    shell redirections included) and ``read``. Shell rules are command
    patterns (``"pytest *"``, ``"git status"``); the others are path globs
    relative to the workspace (``"docs/**"``, ``".env"``).
    """

    model_config = ConfigDict(extra="forbid")

    allow: dict[str, list[str]] = Field(default_factory=dict)
    """Calls that run without asking, e.g. shell = ["pytest *", "git status"]."""

    deny: dict[str, list[str]] = Field(default_factory=dict)
    """Calls that are always refused, e.g. shell = ["git push *"], edit = [".env"]."""


class McpServerConfig(BaseModel):
    """One MCP server: a program to start (stdio) or a URL to reach (http, sse);
    the ``.mcp.json`` entry shape."""

    # Built when first used: a run without such a section validates none.
    model_config = ConfigDict(extra="forbid", defer_build=True)

    type: Literal["stdio", "http", "sse"] = "stdio"
    """Transport: stdio (a program), http (streamable HTTP) or sse (the older SSE
    transport); an entry with a url and no type is http."""

    command: str | None = Field(None, min_length=1)
    """The program that runs the server, e.g. npx or uvx (stdio)."""

    url: str | None = None
    """The server's endpoint, e.g. https://mcp.example.com/mcp (http, sse)."""

    headers: dict[str, str] = Field(default_factory=dict)
    """HTTP headers sent with every request (http, sse), e.g. Authorization =
    "Bearer ${TOKEN}": ${VAR} is taken from the environment."""

    oauth: bool = False
    """Sign in with OAuth when the server asks for it (http, sse): the SDK's OAuth
    client opens the browser and waits for the sign-in on a loopback port."""

    args: list[str] = Field(default_factory=empty_list)
    """Its command-line arguments."""

    env: dict[str, str] = Field(default_factory=dict)
    """Extra environment variables (the server gets only PATH, HOME and a few more otherwise)."""

    cwd: str | None = None
    """Directory to start it in; unset means the workspace root."""

    enabled: bool = True
    """Start this server (false keeps it declared but off)."""

    startup_timeout: float = Field(30.0, gt=0)
    """Seconds to wait for the server to start and list its tools."""

    @model_validator(mode="before")
    @classmethod
    def _url_means_http(cls, data: Any) -> Any:
        if isinstance(data, dict) and data.get("url") and "type" not in data:
            return {**data, "type": "http"}
        return data

    @model_validator(mode="after")
    def _transport_needs(self) -> "McpServerConfig":
        if self.type == "stdio" and not self.command:
            raise ValueError("a stdio server needs a command")
        if self.type != "stdio":
            parts = urlsplit(self.url or "")
            if not self.url:
                raise ValueError(f"an {self.type} server needs a url")
            if parts.scheme.lower() not in ("http", "https") or not parts.netloc:
                raise ValueError(f"the url '{self.url}' is not an http:// or https:// address")
        return self


HookEvent = Literal[
    "SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse", "PreCompact", "Stop",
    "SessionEnd",
    "PermissionRequest", "SubagentStart", "SubagentStop", "Notification",
]  # fmt: skip


class HookConfig(BaseModel):
    """One hook: a program run at a lifecycle point (see ``clover_code.agent.extensions.hooks``)."""

    # Built when first used: a run without such a section validates none.
    model_config = ConfigDict(extra="forbid", defer_build=True)

    matcher: str = ""
    """Regular expression over tool names (PreToolUse, PostToolUse, PermissionRequest),
    agent names (SubagentStart, SubagentStop) or the notification's type (Notification:
    permission_prompt, idle_prompt); empty means every one."""

    command: str = Field(min_length=1)
    """The program and its arguments, split like a shell would (no shell runs it)."""

    timeout: float = Field(60.0, gt=0)
    """Seconds the program may run before it is killed."""

    @field_validator("matcher")
    @classmethod
    def _matcher_compiles(cls, value: str) -> str:
        try:
            re.compile(value)
        except re.error as exc:
            raise ValueError(f"the matcher is not a regular expression ({exc})") from None
        return value


class LspServerConfig(BaseModel):
    """The language server of one language (``[lsp.python]``): which program, for which
    files. A built-in language (python, typescript, go, rust) needs none of the fields:
    unset ones keep the built-in values."""

    # Built when first used: a run without such a section validates none.
    model_config = ConfigDict(extra="forbid", defer_build=True)

    command: str | None = Field(None, min_length=1)
    """The server's program, e.g. pylsp; unset: the first built-in one found in the sandbox."""

    args: list[str] = Field(default_factory=empty_list)
    """Its command-line arguments, e.g. ["--stdio"] (with command only)."""

    patterns: list[str] = Field(default_factory=empty_list)
    """File names it checks, as globs, e.g. ["*.py", "*.pyi"]; unset: the built-in ones."""

    init_options: dict[str, Any] = Field(default_factory=dict)
    """initializationOptions sent to the server when it starts."""

    enabled: bool = True
    """Check this language's files after edits (false turns its server off)."""


class ModelPrice(BaseModel):
    """What one model costs (``[pricing."gpt-4.1-mini"]``), in money per million tokens.

    The amounts are in whatever currency the price list is in (clover-code shows them
    with a $ sign); ``clover_code.agent.turn.cost`` prices each response with them."""

    model_config = ConfigDict(extra="forbid")

    input: float = Field(ge=0)
    """Per million prompt tokens the server did not report as cached."""

    cached_input: float | None = Field(None, ge=0)
    """Per million prompt tokens read from the server's prompt cache (unset: as input)."""

    output: float = Field(ge=0)
    """Per million generated tokens (reasoning included)."""

    def cost(self, prompt_tokens: int, cached_tokens: int, completion_tokens: int) -> float:
        """What a response with these token counts cost."""
        cached = min(max(cached_tokens, 0), prompt_tokens)
        cached_rate = self.input if self.cached_input is None else self.cached_input
        money = (
            (prompt_tokens - cached) * self.input
            + cached * cached_rate
            + completion_tokens * self.output
        )
        return money / 1_000_000
