"""The remote engine: any OpenAI-compatible chat-completions server over HTTP
(``backend``), where it is and what it serves (``endpoint``), its server-sent
events (``sse``) and chunks (``chunks``), grouping streamed tokens into blocks
(``blocks``), retries (``retry``) and ``max_tokens`` (``max_tokens``).
"""
