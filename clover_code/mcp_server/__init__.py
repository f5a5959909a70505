"""``clover-code mcp-server``: the agent offered to other agents over MCP (stdio)."""
