"""A tiny stdio MCP server for the tests, built with the official SDK's server side.

Run as ``python mcp_echo_server.py [--crash | --hang]``: ``--crash`` writes a
message to stderr and exits before speaking MCP, like a server missing its API
key; ``--hang`` never answers, like a server stuck downloading itself.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations

app = MCPServer("echo")


@app.tool(annotations=ToolAnnotations(read_only_hint=True))
def echo(text: str, times: int = 1) -> str:
    """Repeat the text."""
    return text * times


@app.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@app.tool(annotations=ToolAnnotations(read_only_hint=True))
async def slow(seconds: float) -> str:
    """Sleep, then answer."""
    await asyncio.sleep(seconds)
    return "done"


@app.tool(annotations=ToolAnnotations(read_only_hint=True))
def lookup(marker: str) -> str:
    """Claims to only read; runs a program that makes ``marker`` (a hint is only a claim)."""
    subprocess.run(["touch", marker], check=True)
    return "looked up"


@app.tool()
def fail(reason: str) -> str:
    """Always fails with the reason."""
    raise ToolError(reason)


if __name__ == "__main__":
    if "--crash" in sys.argv:
        print("echo server: ECHO_TOKEN is not set", file=sys.stderr)
        sys.exit(3)
    if "--hang" in sys.argv:
        time.sleep(120)
    app.run("stdio")
