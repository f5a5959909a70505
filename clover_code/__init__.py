"""clover-code: a terminal coding agent for block-diffusion LLMs and OpenAI-compatible servers."""

# The one place the version is defined: pyproject.toml reads it (a dynamic version),
# and --version, the JSON result, ACP, MCP and telemetry report it.
__version__ = "0.1.0"
