"""The editor's MCP servers from session/new join the session's servers."""

from __future__ import annotations

from pathlib import Path

from acp.schema import EnvVariable, HttpHeader, HttpMcpServer, McpServerStdio, SseMcpServer

from clover_code.acp.agent import _with_client_mcp
from clover_code.config.load import load_settings


def test_stdio_and_http_servers_are_added(tmp_path: Path) -> None:
    settings = load_settings({}, user_config=tmp_path / "none.toml", env={})
    servers = [
        McpServerStdio(
            name="docs",
            command="/usr/bin/docs-mcp",
            args=["--stdio"],
            env=[EnvVariable(name="TOKEN", value="t")],
        ),
        HttpMcpServer(
            name="web",
            url="http://127.0.0.1:9/mcp",
            headers=[HttpHeader(name="Authorization", value="Bearer t")],
            type="http",
        ),
        SseMcpServer(name="old", url="http://127.0.0.1:9/sse", headers=[], type="sse"),
        HttpMcpServer(name="bad", url="file:///etc", headers=[], type="http"),
    ]
    merged = _with_client_mcp(settings, servers)
    assert list(merged.mcp_servers) == ["docs", "web", "old"]
    web, old = merged.mcp_servers["web"], merged.mcp_servers["old"]
    assert (web.type, web.url, web.headers) == (
        "http",
        "http://127.0.0.1:9/mcp",
        {"Authorization": "Bearer t"},
    )
    assert (old.type, old.url) == ("sse", "http://127.0.0.1:9/sse")
    docs = merged.mcp_servers["docs"]
    assert (docs.command, docs.args, docs.env) == ("/usr/bin/docs-mcp", ["--stdio"], {"TOKEN": "t"})
    assert _with_client_mcp(settings, None) is settings
