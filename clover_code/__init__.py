"""clover-code: a terminal coding agent for block-diffusion LLMs and OpenAI-compatible servers."""

__version__ = "0.1.0"
