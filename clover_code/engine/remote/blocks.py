"""Grouping streamed output into ``BlockCommitted`` events.

The rest of clover-code renders and accounts in blocks. A block-diffusion
server (SGLang serving Clover) already streams one chunk per committed block,
so those boundaries are kept. A token-by-token server (llama.cpp, any
autoregressive model) sends about one token per chunk; those are grouped into
blocks of ``block_size`` tokens so that every backend has the same shape.
"""

from __future__ import annotations

from clover_code.engine.events import BlockCommitted

__all__ = ["BlockGrouper", "estimate_tokens"]

# Below this many characters a chunk is taken to be a single token: real
# tokens are rarely longer, and a 32-token block is rarely shorter.
_SHORT_CHUNK_CHARS = 24

# After this many single-token chunks (by estimate) a stream is known to be
# token-by-token, and a later long chunk (a run of indentation is one token
# in many vocabularies) no longer ends a group early.
_TOKEN_STREAM_AFTER = 8


def estimate_tokens(text: str) -> int:
    """A rough token count for a chunk whose server did not report one."""
    n = len(text)
    if n < _SHORT_CHUNK_CHARS:
        return 1
    return max(2, n // 4)


class BlockGrouper:
    """Turns (text, token count) chunks into numbered ``BlockCommitted`` events.

    A chunk of two or more tokens is one block of its own (any partial group
    before it is committed first). Single-token chunks accumulate until they
    reach ``block_size`` tokens. ``flush`` commits the last partial group.
    """

    __slots__ = (
        "_parts",
        "_pending_tokens",
        "_single_chunks",
        "block_size",
        "blocks",
        "tokens",
    )

    def __init__(self, block_size: int) -> None:
        if block_size < 1:
            raise ValueError("block_size must be at least 1")
        self.block_size = block_size
        self.blocks = 0
        """How many blocks have been committed."""
        self.tokens = 0
        """How many tokens the committed blocks hold."""
        self._parts: list[str] = []
        self._pending_tokens = 0
        self._single_chunks = 0

    def add(
        self, text: str, tokens: int, *, exact: bool, whole: bool = False
    ) -> list[BlockCommitted]:
        """Add one chunk; return the blocks it completes (often none).

        ``exact`` says ``tokens`` came from the server's usage counts rather
        than from ``estimate_tokens``; only estimates need the token-stream
        heuristic. ``whole`` says the server marked the chunk as one committed
        block (its denoising drafts came before it), however short.
        """
        if whole or (tokens >= 2 and (exact or self._single_chunks < _TOKEN_STREAM_AFTER)):
            committed = self.flush()
            committed.append(self._commit(text, tokens))
            return committed
        if tokens <= 1:
            self._single_chunks += 1
        self._parts.append(text)
        self._pending_tokens += max(tokens, 1)
        if self._pending_tokens >= self.block_size:
            return self.flush()
        return []

    def flush(self) -> list[BlockCommitted]:
        """Commit the partial group, if any."""
        if not self._parts:
            return []
        text = "".join(self._parts)
        tokens = self._pending_tokens
        self._parts = []
        self._pending_tokens = 0
        return [self._commit(text, tokens)]

    def _commit(self, text: str, tokens: int) -> BlockCommitted:
        block = BlockCommitted(self.blocks, text, tokens)
        self.blocks += 1
        self.tokens += tokens
        return block
