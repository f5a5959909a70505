"""Secrets never leave in a message: one redaction function for every sink.

``redact(text)`` replaces every secret the process knows with ``[REDACTED]``:
values ``remember``ed (the model's API key, the GitHub token), the values of
environment variables whose names say they hold a credential, URL userinfo,
``Authorization`` / ``Cookie`` header values and ``Bearer`` tokens, and the
well-known shapes of GitHub and API tokens. It imports nothing of ours, so
every layer may use it (the bottom of the layers contract).

- ``secrets.py``: what the process knows and the function itself.
- ``sinks.py``: wrappers for the sinks that are streams or loggers.
"""

from clover_code.redact.secrets import (
    MASK,
    agent_credential,
    github_credential,
    holds_credential,
    known_secrets,
    redact,
    redact_tree,
    remember,
    without_agent_credentials,
)
from clover_code.redact.sinks import RedactingStream, redact_log_records, redacting

__all__ = [
    "MASK",
    "RedactingStream",
    "agent_credential",
    "github_credential",
    "holds_credential",
    "known_secrets",
    "redact",
    "redact_log_records",
    "redact_tree",
    "redacting",
    "remember",
    "without_agent_credentials",
]
