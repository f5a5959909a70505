"""The Qwen3.x output format: the streaming parser of reasoning, answer text and
qwen3_coder tool calls (``parser``, ``tags``, ``calls``) and the typing of tool
arguments by their schemas (``schema_values``).
"""
