"""How the MCP client reaches one server: a program over stdio, or a URL over
streamable HTTP or the older SSE transport (through the official ``mcp`` SDK).

HTTP servers get the configured ``headers`` on every request; ``${VAR}`` in
them (and in the URL) is taken from the environment, so a bearer token can
stay out of the config file. With ``oauth = true`` the SDK's OAuth client
(``tools.mcp_oauth``) signs in when the server asks for it.
"""

from __future__ import annotations

import os
import re
from collections.abc import AsyncIterator, Mapping
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any, TextIO

from mcp import StdioServerParameters
from mcp.client.sse import sse_client
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from clover_code.config.settings import McpServerConfig

__all__ = ["MissingVariable", "describe", "open_transport"]

_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


class MissingVariable(Exception):
    """A ``${VAR}`` without a default names an unset environment variable."""


def _expand(text: str, env: Mapping[str, str]) -> str:
    def sub(match: re.Match[str]) -> str:
        name, default = match.group(1), match.group(2)
        if name in env:
            return env[name]
        if default is None:
            raise MissingVariable(name)
        return default

    return _VAR.sub(sub, text)


def describe(config: McpServerConfig) -> str:
    """What a failure message names: the program, or the URL."""
    return (config.command if config.type == "stdio" else config.url) or ""


def open_transport(
    name: str,
    config: McpServerConfig,
    root: Path,
    errlog: TextIO,
    env: Mapping[str, str] | None = None,
) -> AbstractAsyncContextManager[Any]:
    """The SDK transport for ``config`` (entered by the SDK's ``Client``)."""
    if config.type == "stdio":
        cwd = root / config.cwd if config.cwd else root
        params = StdioServerParameters(
            command=config.command or "", args=config.args, env=config.env or None, cwd=cwd
        )
        return stdio_client(params, errlog=errlog)
    environ = os.environ if env is None else env
    url = _expand(config.url or "", environ)
    headers = {key: _expand(value, environ) for key, value in config.headers.items()}
    auth = None
    if config.oauth:
        from clover_code.tools.mcp_oauth import oauth_provider

        auth = oauth_provider(name, url)
    if config.type == "sse":
        return sse_client(url, headers=headers or None, auth=auth)
    return _streamable(url, headers, auth)


@asynccontextmanager
async def _streamable(url: str, headers: dict[str, str], auth: Any) -> AsyncIterator[Any]:
    # The SDK leaves a client it was given open; this one is ours to close.
    async with (
        create_mcp_http_client(headers=headers or None, auth=auth) as client,
        streamable_http_client(url, http_client=client) as streams,
    ):
        yield streams
