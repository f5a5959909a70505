"""The sinks that are streams or loggers, made to pass their text through ``redact``."""

from __future__ import annotations

import logging
from typing import Any, TextIO, cast

from clover_code.redact.secrets import redact

__all__ = ["RedactingStream", "redact_log_records", "redacting"]


class RedactingStream:
    """A text stream that writes ``redact(text)`` to ``inner``; the rest is ``inner``'s.

    Each ``write`` is redacted on its own: the JSON lines and sentences written
    through it are whole, so a secret is never split between two writes.
    """

    def __init__(self, inner: TextIO) -> None:
        self.inner = inner

    def write(self, text: str) -> int:
        """Write ``text`` with its secrets masked; returns the length given."""
        self.inner.write(redact(text))
        return len(text)

    def flush(self) -> None:
        """Flush ``inner``."""
        self.inner.flush()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def redacting(stream: TextIO) -> TextIO:
    """``stream`` behind a ``RedactingStream``, typed as the stream it stands for."""
    if isinstance(stream, RedactingStream):
        return cast(TextIO, stream)
    return cast(TextIO, RedactingStream(stream))


_installed = False


def redact_log_records() -> None:
    """Mask secrets in every log record's message from now on (idempotent).

    The record factory is the one place every logger's records pass, whatever
    handler later writes them.
    """
    global _installed
    if _installed:
        return
    _installed = True
    make = logging.getLogRecordFactory()

    def factory(*args: Any, **kwargs: Any) -> logging.LogRecord:
        record = make(*args, **kwargs)
        try:
            message = record.getMessage()
        except (TypeError, ValueError):
            return record  # a malformed call: logging reports it itself
        record.msg, record.args = redact(message), None
        if record.exc_info and not record.exc_text:
            record.exc_text = redact(logging.Formatter().formatException(record.exc_info))
        return record

    logging.setLogRecordFactory(factory)
