"""The settings' structured sections: permission rules, MCP servers and hooks.

Each is a table in the config files (``[permissions]``, ``[mcp_servers.NAME]``,
``[[hooks.EVENT]]``) and a field of ``clover_code.config.Settings``, which
names them too.
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

__all__ = ["HookConfig", "HookEvent", "McpServerConfig", "PermissionRules"]


class PermissionRules(BaseModel):
    """Allow and deny rules on top of the approval mode; deny beats allow.

    Keys are tool names (``shell``, ``write_file``, an MCP tool's name; a
    ``*`` glob may stand for part of a name) or ``edit`` (every file write,
    shell redirections included) and ``read``. Shell rules are command
    patterns (``"pytest *"``, ``"git status"``); the others are path globs
    relative to the workspace (``"docs/**"``, ``".env"``).
    """

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    allow: dict[str, list[str]] = Field(default_factory=dict)
    """Calls that run without asking, e.g. shell = ["pytest *", "git status"]."""

    deny: dict[str, list[str]] = Field(default_factory=dict)
    """Calls that are always refused, e.g. shell = ["git push *"], edit = [".env"]."""


class McpServerConfig(BaseModel):
    """One stdio MCP server: the program to start and how (the ``.mcp.json`` entry shape)."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    type: Literal["stdio"] = "stdio"
    """Transport; only stdio servers are supported."""

    command: str = Field(min_length=1)
    """The program that runs the server, e.g. npx or uvx."""

    args: list[str] = Field(default_factory=list)
    """Its command-line arguments."""

    env: dict[str, str] = Field(default_factory=dict)
    """Extra environment variables (the server gets only PATH, HOME and a few more otherwise)."""

    cwd: str | None = None
    """Directory to start it in; unset means the workspace root."""

    enabled: bool = True
    """Start this server (false keeps it declared but off)."""

    startup_timeout: float = Field(30.0, gt=0)
    """Seconds to wait for the server to start and list its tools."""


HookEvent = Literal[
    "SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse", "PreCompact", "Stop",
    "SessionEnd",
]  # fmt: skip


class HookConfig(BaseModel):
    """One hook: a program run at a lifecycle point (see ``clover_code.agent.hooks``)."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    matcher: str = ""
    """Regular expression over tool names (PreToolUse, PostToolUse); empty means every tool."""

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
