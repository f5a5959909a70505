"""The remote engine: any OpenAI-compatible chat-completions server over HTTP
(``backend``), where it is and what it serves (``endpoint``), what a request
asks of it (``request``), reading its response (``response``): server-sent
events (``sse``), chunks (``chunks``) and the native tool calls in them
(``native_calls``), grouping streamed tokens into blocks (``blocks``), retries
(``retry``) and ``max_tokens`` (``max_tokens``).
"""
