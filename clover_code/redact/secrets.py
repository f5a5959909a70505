"""What the process knows to be secret, and the one function that hides it."""

from __future__ import annotations

import functools
import os
import re
import threading
from collections.abc import Iterable, Mapping
from typing import Any

__all__ = [
    "MASK",
    "agent_credential",
    "github_credential",
    "holds_credential",
    "known_secrets",
    "redact",
    "redact_tree",
    "remember",
    "without_agent_credentials",
]

MASK = "[REDACTED]"
"""What a secret is replaced with."""

_MIN_LENGTH = 6
"""Shorter values are not taken for secrets: masking "1" or "true" would garble text."""

_CREDENTIAL_NAME = re.compile(
    r"KEY|TOKEN|SECRET|PASSW|PASSPHRASE|CREDENTIAL|COOKIE|AUTH(?!ORITY)", re.IGNORECASE
)

_RULES: tuple[tuple[tuple[str, ...], str, str], ...] = (
    # URL userinfo: scheme://user:password@host (the user alone may be a token too).
    (("://",), r"(?i)\b([a-z][a-z0-9+.-]*://)[^/\s@\"'<>]+@", rf"\1{MASK}@"),
    # Header values, as HTTP, curl -H or a JSON dump of headers shows them.
    (
        ("authorization", "api-key"),
        r"(?i)\b((?:proxy-)?authorization|x-api-key|api-key)(\"?\s*[:=]\s*\"?)"
        r"(?:(?:bearer|basic|token|digest)\s+)?[^\s\"',;]+",
        rf"\1\2{MASK}",
    ),
    (("cookie",), r"(?i)\b((?:set-)?cookie)(\"?\s*:\s*\"?)[^\r\n\"]+", rf"\1\2{MASK}"),
    (("bearer",), r"\b(Bearer|bearer|BEARER)(\s+)[A-Za-z0-9._~+/=-]{8,}", rf"\1\2{MASK}"),
    # GitHub tokens and API keys in the shapes their issuers give them.
    (("gh",), r"\b(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,})", MASK),
    (("sk-",), r"\bsk-[A-Za-z0-9_-]{16,}", MASK),
)
"""Credential-shaped strings: (what a text holds, lowercased, wherever the pattern can
match, the pattern, its replacement). Most texts hold none of those words, so the
patterns are compiled when a text first could match (``_pattern``), not at every start."""


@functools.cache
def _pattern(source: str) -> re.Pattern[str]:
    return re.compile(source)


_GITHUB_CREDENTIALS = frozenset(
    {
        "GITHUB_TOKEN",
        "GH_TOKEN",
        "GITHUB_PAT",
        "GH_ENTERPRISE_TOKEN",
        "GITHUB_ENTERPRISE_TOKEN",
    }
)
# ACTIONS_RUNTIME_TOKEN, ACTIONS_ID_TOKEN_REQUEST_TOKEN and their URLs let a step act as the
# job; INPUT_* are an action's inputs, the token among them.
_GITHUB_PREFIXES = ("ACTIONS_", "INPUT_GITHUB_TOKEN")
_MODEL_CREDENTIALS = frozenset({"OPENAI_API_KEY", "INPUT_API_KEY", "INPUT_MODEL_KEY"})

_lock = threading.Lock()
_remembered: set[str] = set()


@functools.cache
def holds_credential(name: str) -> bool:
    """Whether an environment variable's name says its value is a credential."""
    # Cached: every redaction asks it of every variable, and names are few.
    return bool(_CREDENTIAL_NAME.search(name))


def github_credential(name: str) -> bool:
    """Whether variable ``name`` holds a GitHub or Actions credential (the job's token,
    the runtime and OIDC tokens and their URLs): the agent never sees one."""
    upper = name.upper()
    return upper in _GITHUB_CREDENTIALS or upper.startswith(_GITHUB_PREFIXES)


def agent_credential(name: str) -> bool:
    """Whether variable ``name`` holds the model's or the GitHub bot's credential: no
    command the agent runs, on any sandbox kind or the host, sees it."""
    upper = name.upper()
    if github_credential(upper) or upper in _MODEL_CREDENTIALS:
        return True
    return upper.startswith("CLOVER_") and holds_credential(upper)


def without_agent_credentials(env: Mapping[str, str]) -> dict[str, str]:
    """``env`` less the agent's credentials, by name, and any variable holding a
    remembered secret (an API key from a config file, under whatever name)."""
    with _lock:
        remembered = tuple(_remembered)
    return {
        name: value
        for name, value in env.items()
        if not agent_credential(name) and not any(secret in value for secret in remembered)
    }


def remember(*values: str | None) -> None:
    """Add ``values`` to the secrets every ``redact`` call hides (None and short ones skipped)."""
    with _lock:
        _remembered.update(v for v in values if v and len(v) >= _MIN_LENGTH)


def known_secrets(env: Mapping[str, str] | None = None) -> list[str]:
    """Every secret value the process knows, longest first: the remembered ones and the
    credential-named variables of ``env`` (default: ``os.environ``)."""
    source = os.environ if env is None else env
    found = set(_env_secrets(source))
    with _lock:
        found |= _remembered
    return sorted(found, key=len, reverse=True)


def _env_secrets(env: Mapping[str, str]) -> Iterable[str]:
    # By name first: reading a value of os.environ decodes it.
    for name in env:
        if holds_credential(name):
            value = env[name]
            # A path names where a credential lies; it is not the credential.
            if len(value) >= _MIN_LENGTH and not value.startswith("/"):
                yield value


def redact(text: str, env: Mapping[str, str] | None = None) -> str:
    """``text`` with every known secret and every credential-shaped string masked."""
    if not text:
        return text
    for secret in known_secrets(env):
        if secret in text:
            text = text.replace(secret, MASK)
    # Where a pattern can match (a masking only ever takes words out, so the one lowered
    # text stays a fair guide); IGNORECASE also matches the dotless ı with i.
    lowered = text.lower().replace("\u0131", "i")
    for needles, source, replacement in _RULES:
        if any(needle in lowered for needle in needles):
            text = _pattern(source).sub(replacement, text)
    return text


def redact_tree(value: Any) -> Any:
    """``value`` (JSON-like: dicts, lists, strings...) with ``redact`` applied to every string."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {key: redact_tree(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [redact_tree(item) for item in value]
    return value
