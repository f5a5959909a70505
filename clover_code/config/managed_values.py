"""The values a managed settings file holds, and how a refused request is named.

``clover_code.config.managed`` builds its policy of these: a value with the
file that set it (``Pin``), an ``allowed_mcp_servers`` entry (``ServerRule``),
forced telemetry (``ForcedTelemetry``) and where a request came from
(``Source``, for the refusal sentence).
"""

from __future__ import annotations

import fnmatch
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, TypeVar
from urllib.parse import urlsplit

__all__ = [
    "SECRET_SETTINGS",
    "ForcedTelemetry",
    "Pin",
    "ServerRule",
    "Source",
    "refusal",
    "server_target",
    "shown",
    "url_within",
]

T = TypeVar("T")

SECRET_SETTINGS = frozenset({"api_key", "search_api_key", "serve_api_key"})
"""Settings whose values are secrets: a refusal or a listing names them, never shows them."""


@dataclass(frozen=True, slots=True)
class Pin(Generic[T]):
    """A value and the managed file that set it."""

    value: T
    file: Path


@dataclass(frozen=True, slots=True)
class ServerRule:
    """One entry of ``allowed_mcp_servers``: every part it gives must match."""

    name: str | None = None
    command: tuple[str, ...] | None = None
    """The server's program and arguments, exactly."""
    url: str | None = None
    """A glob over the server's URL, e.g. ``https://mcp.example.com/*``."""

    def matches(self, name: str, command: tuple[str, ...] | None, url: str | None) -> bool:
        """Whether the server ``name`` (started with ``command``, or reached at ``url``)
        is one this entry allows."""
        if self.name is not None and self.name != name:
            return False
        if self.command is not None and self.command != command:
            return False
        return self.url is None or (url is not None and fnmatch.fnmatchcase(url, self.url))

    def shown(self) -> str:
        """The entry as the file writes it."""
        if self.command is None and self.url is None and self.name is not None:
            return json.dumps(self.name)
        parts = [f"{k} = {json.dumps(v)}" for k, v in self._parts() if v is not None]
        return "{ " + ", ".join(parts) + " }"

    def _parts(self) -> Iterable[tuple[str, Any]]:
        yield "name", self.name
        yield "command", list(self.command) if self.command is not None else None
        yield "url", self.url


@dataclass(frozen=True, slots=True)
class ForcedTelemetry:
    """Where every session's spans and counters go, whatever the ``OTEL_*`` variables say."""

    endpoint: str
    """The OTLP/HTTP collector, e.g. ``https://otel.example.com:4318``
    (traces go to ``/v1/traces``, counters to ``/v1/metrics``)."""
    headers: tuple[tuple[str, str], ...] = ()
    """Headers sent with every export (values are treated as secrets)."""

    def signal_endpoint(self, signal: str) -> str:
        """The URL one signal (``traces`` or ``metrics``) is posted to."""
        return f"{self.endpoint.rstrip('/')}/v1/{signal}"


@dataclass(frozen=True, slots=True)
class Source:
    """Where a request came from, to name it in a refusal."""

    kind: str
    """``flag``, ``option`` (a program's, through the SDK), ``environment``, ``file`` (a
    config file), ``managed`` (a managed file) or ``runtime``."""
    path: Path | None = None

    def names(self, key: str, value: Any) -> str:
        """The request as the user wrote it, e.g. ``--approval full-auto`` (a secret's
        value is never shown)."""
        if key in SECRET_SETTINGS:
            if self.kind == "flag":
                return f"--{key.replace('_', '-')}"
            if self.kind == "option":
                return f"option {key}"
            if self.kind == "environment":
                return f"CLOVER_{key.upper()}"
            return f"{key} in {self.where()}"
        if self.kind == "flag":
            return f"--{key.replace('_', '-')} {_plain(value)}"
        if self.kind == "option":
            return f"option {key}={shown(value)}"
        if self.kind == "environment":
            return f"CLOVER_{key.upper()}={_plain(value)}"
        if self.kind == "runtime":
            return f"{key} mode {_plain(value)}"
        return f"{key} = {shown(value)} in {self.where()}"

    def where(self) -> str:
        """The source alone, e.g. ``config file ~/.config/clover-code/config.toml``."""
        if self.kind == "flag":
            return "the command line"
        if self.kind == "option":
            return "the program's options"
        if self.kind == "environment":
            return "the environment"
        if self.kind == "runtime":
            return "this session"
        label = "managed settings file" if self.kind == "managed" else "config file"
        return f"{label} {self.path}"


def _plain(value: Any) -> str:
    return value if isinstance(value, str) else shown(value)


def shown(value: Any) -> str:
    """A value as a TOML file would write it (JSON is close enough for what is shown)."""
    try:
        return json.dumps(value)
    except TypeError:
        return str(value)


def refusal(request: str, clause: str) -> str:
    """The one sentence: ``REQUEST is refused because SETTING is set by your
    administrator in FILE.``"""
    return f"{request} is refused because {clause}."


def server_target(entry: Mapping[str, Any]) -> tuple[tuple[str, ...] | None, str | None]:
    """What an MCP server table starts (program and arguments) or reaches (URL)."""
    command = entry.get("command")
    args = entry.get("args")
    started = None
    if isinstance(command, str):
        words = [str(a) for a in args] if isinstance(args, list) else []
        started = (command, *words)
    url = entry.get("url")
    return started, url if isinstance(url, str) else None


def url_within(url: str, allowed: str) -> bool:
    """Whether ``url`` is ``allowed`` or a path below it (same scheme, host and port)."""
    a, b = urlsplit(url.strip()), urlsplit(allowed.strip())
    try:
        ports = (a.port or _DEFAULT_PORTS.get(a.scheme.lower()), b.port)
    except ValueError:  # a port that is not a number
        return False
    if a.scheme.lower() != b.scheme.lower() or (a.hostname or "") != (b.hostname or ""):
        return False
    if ports[0] != (ports[1] or _DEFAULT_PORTS.get(b.scheme.lower())):
        return False
    base = b.path.rstrip("/")
    path = a.path.rstrip("/")
    return path == base or path.startswith(base + "/")


_DEFAULT_PORTS = {"http": 80, "https": 443}
