"""Waiting for a model server that is still starting (SGLang loads for minutes).

A server that cannot be reached yet, or answers 502/503 or "no models" while it
loads, is retried with a growing delay; a wrong address, key or model is not
(retrying would never help).
"""

from __future__ import annotations

import re

from clover_code.errors import AuthError, CloverError, EngineUnavailable, ModelNotFound

BACKOFF = (1.0, 2.0, 4.0, 8.0, 15.0)
"""Seconds before each retry; later retries wait ``MAX_DELAY``."""
MAX_DELAY = 30.0

_LOADING_STATUS = re.compile(r"\(HTTP (502|503|504)\b")


def not_ready(exc: CloverError) -> bool:
    """Whether the failure looks like a server that is not up (or not loaded) yet."""
    if isinstance(exc, AuthError):
        return False
    if isinstance(exc, ModelNotFound):
        return "serves no models" in str(exc)
    if not isinstance(exc, EngineUnavailable):
        return False
    message = str(exc)
    reached = exc.__cause__ is not None and type(exc.__cause__).__module__.startswith("httpx")
    return reached or "cannot reach" in message or bool(_LOADING_STATUS.search(message))


def delay(attempt: int) -> float:
    """Seconds to wait after failed attempt number ``attempt`` (1 for the first)."""
    return BACKOFF[attempt - 1] if attempt <= len(BACKOFF) else MAX_DELAY
