"""A real MCP server over HTTP on loopback, built with the official SDK's server side.

Run as ``python mcp_http_server.py PORT [--sse] [--token TOKEN]``: streamable
HTTP at ``/mcp`` (or the older SSE transport at ``/sse`` with ``--sse``);
with ``--token``, every request without ``Authorization: Bearer TOKEN`` gets
401, like a hosted server behind an API key.
"""

from __future__ import annotations

import argparse

import uvicorn
from mcp.server.mcpserver import MCPServer
from mcp.types import ToolAnnotations
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.types import ASGIApp, Receive, Scope, Send

app = MCPServer("web-echo")


@app.tool(annotations=ToolAnnotations(read_only_hint=True))
def shout(text: str) -> str:
    """Say the text louder."""
    return text.upper() + "!"


@app.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


class _Bearer:
    def __init__(self, inner: ASGIApp, token: str) -> None:
        self.inner = inner
        self.token = token

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            got = Request(scope).headers.get("authorization")
            if got != f"Bearer {self.token}":
                response: Response = PlainTextResponse("unauthorized", status_code=401)
                await response(scope, receive, send)
                return
        await self.inner(scope, receive, send)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("port", type=int)
    parser.add_argument("--sse", action="store_true")
    parser.add_argument("--token")
    args = parser.parse_args()
    asgi: ASGIApp = app.sse_app() if args.sse else app.streamable_http_app()
    if args.token:
        asgi = _Bearer(asgi, args.token)
    uvicorn.run(asgi, host="127.0.0.1", port=args.port, log_level="warning")


if __name__ == "__main__":
    main()
