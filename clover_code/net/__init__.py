"""Network access for the agent's web tools: address checks, fetching, search."""
