"""Which MCP servers a session declares: the settings, and the project's ``.mcp.json``.

``.mcp.json`` in the workspace root has the shape other agents use::

    {"mcpServers": {"docs": {"command": "uvx", "args": ["docs-mcp"], "env": {"K": "${K}"}}}}

An entry with a ``url`` (``"type": "http"`` or ``"sse"``) is a server reached
over HTTP, with ``headers``. ``${VAR}`` and ``${VAR:-default}`` in ``command``,
``args``, ``env``, ``cwd``, ``url`` and ``headers`` are taken from the
environment. A server named in the settings wins
over a project or plugin server of the same name (plugins' are named
``plugin:server``). Problems never stop the session:
each becomes one notice sentence and the server (or the whole file, when it
is not valid JSON) is skipped. Project servers come from the repository, so
they are marked ``project`` and started only when the user trusts them: the
exact content of the ``.mcp.json`` was trusted (``clover_code.config.trust``), or
the user's own config says ``mcp_project = "trust"``. The file is hashed as
it is read here, so a file changed since the settings were loaded (by a
sandboxed command, say) is untrusted again. An administrator's managed settings may disable MCP or
allow only some servers (``allowed_mcp_servers``): the others are not started,
and a notice says why.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from clover_code.config.settings import McpServerConfig, Settings
from clover_code.config.trust import MCP_FILE, digest
from clover_code.protocol.json_text import JSONLimitError, loads_bounded

__all__ = ["PROJECT_FILE", "DeclaredServer", "declared_servers", "read_project_servers"]

PROJECT_FILE = MCP_FILE

_VAR = r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}"  # compiled by ``re`` on first use
_KNOWN = frozenset(McpServerConfig.model_fields)


@dataclass(frozen=True, slots=True)
class DeclaredServer:
    """One server to start: its name, settings, and where it was declared."""

    name: str
    config: McpServerConfig
    source: str
    """Where it was declared: ``settings``, or the path of the ``.mcp.json``."""
    project: bool = False
    """Declared by the repository (``.mcp.json``), not by the user."""
    trusted: bool = False
    """A project server the user trusts (start it without asking)."""


def declared_servers(
    settings: Settings, root: Path, plugins: Sequence[DeclaredServer] = ()
) -> tuple[list[DeclaredServer], list[str]]:
    """The enabled servers of the settings, of ``plugins`` (the user's, as trusted as
    the settings) and (unless ignored) of ``root/.mcp.json``.

    Returns the servers and the notices about what was skipped.
    """
    servers = [
        DeclaredServer(name, config, "settings")
        for name, config in settings.mcp_servers.items()
        if config.enabled
    ]
    notices: list[str] = []
    for server in plugins:
        if server.name in settings.mcp_servers:
            notices.append(
                f"MCP server '{server.name}' of {server.source} is also in your settings; "
                "the settings' one is used."
            )
        elif server.config.enabled:
            servers.append(server)
    off = settings.managed.feature_clause("mcp")
    if off is not None:
        # The config files' servers were refused when read; an editor's and the project's
        # are not started.
        declared = bool(servers) or (root / PROJECT_FILE).is_file()
        return [], [f"no MCP server was started because {off}."] if declared else []
    path = root / PROJECT_FILE
    if settings.mcp_project != "ignore" and path.is_file():
        try:
            raw = path.read_bytes()
        except OSError as exc:
            return servers, [
                f"{path} cannot be read ({exc.strerror}); its MCP servers were not started."
            ]
        report = settings.project_trust
        content = digest(raw)
        trusted = settings.mcp_project == "trust" or settings.trust_project_settings
        trusted = trusted or (report is not None and report.trusts(PROJECT_FILE, content))
        project, notices = read_project_servers(path, raw=raw)
        if project and not trusted:
            if report is None or not report.mentions(PROJECT_FILE, content):
                notices.append(
                    f"{path} is not trusted (it is new or changed since the settings were "
                    "read), so its MCP servers were not started; review it, then trust it "
                    "when the app asks or run with --trust-project."
                )
            project = []
        for server in project:
            if server.name in settings.mcp_servers:
                notices.append(
                    f"MCP server '{server.name}' of {server.source} is also in your settings; "
                    "the settings' one is used."
                )
            elif server.config.enabled:
                servers.append(replace(server, trusted=True))
    return _allowed(servers, settings, notices)


def _allowed(
    servers: list[DeclaredServer], settings: Settings, notices: list[str]
) -> tuple[list[DeclaredServer], list[str]]:
    """The servers an administrator's ``allowed_mcp_servers`` lets start (the settings'
    own were checked when read; an editor's and the project's are checked here)."""
    kept: list[DeclaredServer] = []
    for server in servers:
        config = server.config
        command = (config.command, *config.args) if config.command else None
        clause = settings.managed.mcp_server_clause(server.name, command, config.url)
        if clause is None:
            kept.append(server)
        else:
            notices.append(
                f"MCP server '{server.name}' of {server.source} was not started because {clause}."
            )
    return kept, notices


def read_project_servers(
    path: Path, environ: Mapping[str, str] | None = None, *, raw: bytes | None = None
) -> tuple[list[DeclaredServer], list[str]]:
    """Parse one ``.mcp.json`` (``raw``: its bytes, already read); a missing file
    declares nothing."""
    env = os.environ if environ is None else environ
    try:
        text = (raw if raw is not None else path.read_bytes()).decode("utf-8")
    except FileNotFoundError:
        return [], []
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) else "it is not UTF-8"
        return [], [f"{path} cannot be read ({reason}); its MCP servers were not started."]
    try:
        data = loads_bounded(text)
    except JSONLimitError as exc:
        return [], [f"{path} cannot be used ({exc}); its MCP servers were not started."]
    except json.JSONDecodeError as exc:
        return [], [
            f"{path} is not valid JSON ({exc.msg} at line {exc.lineno}, column {exc.colno}); "
            "its MCP servers were not started."
        ]
    table = data.get("mcpServers") if isinstance(data, dict) else None
    if not isinstance(table, dict):
        return [], [f'{path} has no "mcpServers" object; its MCP servers were not started.']
    servers: list[DeclaredServer] = []
    notices: list[str] = []
    for name, entry in table.items():
        where = f"MCP server '{name}' in {path}"
        if not isinstance(entry, dict):
            notices.append(f"{where} is not a JSON object; it was skipped.")
            continue
        if entry.get("type") in ("streamable-http", "streamable_http", "streamableHttp"):
            entry = {**entry, "type": "http"}  # other agents' names for the http transport
        kind = entry.get("type", "http" if "url" in entry else "stdio")
        if kind not in ("stdio", "http", "sse"):
            notices.append(f"{where} uses the unknown transport '{kind}'; it was skipped.")
            continue
        fields = {k: v for k, v in entry.items() if k in _KNOWN}  # other agents' keys are fine
        try:
            expanded = _expand(fields, env)
            config = McpServerConfig.model_validate(expanded)
        except _MissingVariable as exc:
            notices.append(f"{where} needs the environment variable {exc}, which is not set.")
            continue
        except ValidationError as exc:
            first = exc.errors()[0]
            key = ".".join(str(x) for x in first["loc"])
            msg = str(first["msg"]).removeprefix("Value error, ")
            bad = f"a bad '{key}' ({msg})" if key else f"a problem ({msg})"
            notices.append(f"{where} has {bad}; it was skipped.")
            continue
        servers.append(DeclaredServer(str(name), config, str(path), project=True))
    return servers, notices


class _MissingVariable(Exception):
    """A ``${VAR}`` without a default names an unset variable."""


def _expand(value: Any, env: Mapping[str, str]) -> Any:
    """``value`` with ``${VAR}`` and ``${VAR:-default}`` replaced in every string."""
    if isinstance(value, str):

        def sub(match: re.Match[str]) -> str:
            name, default = match.group(1), match.group(2)
            if name in env:
                return env[name]
            if default is None:
                raise _MissingVariable(name)
            return default

        return re.sub(_VAR, sub, value)
    if isinstance(value, list):
        return [_expand(v, env) for v in value]
    if isinstance(value, dict):
        return {k: _expand(v, env) for k, v in value.items()}
    return value
