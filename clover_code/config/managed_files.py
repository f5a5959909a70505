"""Reading the managed settings files into one ``ManagedPolicy``.

A managed file is TOML: ordinary settings at the top (each is then fixed)
and a ``[limits]`` table::

    approval = "ask"
    [limits]
    max_approval = "auto-edit"
    forbidden_sandboxes = ["none"]
    allowed_base_urls = ["https://llm.example.com/v1"]
    allowed_mcp_servers = ["docs", { url = "https://mcp.example.com/*" }]
    telemetry = { endpoint = "https://otel.example.com:4318" }
    disabled = ["web_fetch", "plugins"]

Everything in it is checked when it is read: an unknown key, a bad limit or
an unknown feature is one ``ConfigError`` naming the file, so a typo never
loosens policy silently (the fixed settings' values are checked against the
settings model by ``clover_code.config.settings``).

Two files merge into the stricter policy: the lower ``max_approval``, the
union of ``forbidden_sandboxes`` and ``disabled``, the intersection of the
allowed lists (a request must pass every file's list), telemetry forced when
either forces it. Where both fix a setting or force telemetry to different
endpoints there is no order, and the system file wins: the other file is
named by an environment variable, which the user can set.
"""

from __future__ import annotations

import difflib
import json
import os
from collections.abc import Collection, Mapping, Sequence
from pathlib import Path
from typing import Any

from clover_code.config.loosening import APPROVAL_ORDER
from clover_code.config.managed import (
    EXTRA_FILE_VARIABLE,
    FEATURES,
    LIMIT_KEYS,
    SANDBOX_KINDS,
    SYSTEM_FILE,
    ManagedPolicy,
)
from clover_code.config.managed_values import ForcedTelemetry, Pin, ServerRule
from clover_code.config.sources import check_base_url, read_toml
from clover_code.errors import ConfigError

__all__ = ["managed_paths", "merged", "read_managed_file", "read_policy"]

LIMITS = "limits"
"""The table of limits; every other top-level key is a fixed setting."""


def managed_paths(environ: Mapping[str, str]) -> list[Path]:
    """The managed files to read: the system file when it exists (always looked for),
    then the file ``CLOVER_MANAGED_SETTINGS`` names, which must exist."""
    paths: list[Path] = []
    if SYSTEM_FILE.exists() or SYSTEM_FILE.is_symlink():  # a broken link fails to read
        paths.append(SYSTEM_FILE)
    named = environ.get(EXTRA_FILE_VARIABLE, "").strip()
    if named:
        extra = Path(named).expanduser()
        if not extra.is_file():
            raise ConfigError(
                f"{EXTRA_FILE_VARIABLE} names {extra}, which is not a file; point it at "
                "the managed settings file, or unset it."
            )
        if not any(os.path.realpath(p) == os.path.realpath(extra) for p in paths):
            paths.append(extra)
    return paths


def read_policy(paths: Sequence[Path], known: Collection[str]) -> ManagedPolicy:
    """The policy of the files at ``paths`` (system file first), merged; ``known``
    are the settings a file may fix."""
    return merged([read_managed_file(path, known) for path in paths])


def merged(policies: Sequence[ManagedPolicy]) -> ManagedPolicy:
    """One policy from several files' (the first is the system file's): the stricter
    value of each limit; for fixed settings and the telemetry endpoint, the first file's."""
    fixed: dict[str, Pin[Any]] = {}
    for policy in reversed(policies):
        fixed.update(policy.fixed)
    ceilings = [p.max_approval for p in policies if p.max_approval is not None]
    telemetry = next((p.telemetry for p in policies if p.telemetry is not None), None)
    return ManagedPolicy(
        files=tuple(f for p in policies for f in p.files),
        fixed=fixed,
        max_approval=min(ceilings, key=lambda pin: APPROVAL_ORDER.index(pin.value), default=None),
        forbidden_sandboxes=tuple(pin for p in policies for pin in p.forbidden_sandboxes),
        allowed_base_urls=tuple(pin for p in policies for pin in p.allowed_base_urls),
        allowed_mcp_servers=tuple(pin for p in policies for pin in p.allowed_mcp_servers),
        telemetry=telemetry,
        disabled=tuple(pin for p in policies for pin in p.disabled),
    )


def read_managed_file(path: Path, known: Collection[str]) -> ManagedPolicy:
    """One managed file's policy; any mistake in it is a ``ConfigError`` naming it."""
    data = read_toml(path)
    where = f"managed settings file {path}"
    fixed: dict[str, Pin[Any]] = {}
    for key, value in data.items():
        if key == LIMITS:
            continue
        if key not in known:
            raise ConfigError(f"{where}: {_unknown(key, [*known, LIMITS])}")
        fixed[key] = Pin(value, path)
    limits = data.get(LIMITS, {})
    if not isinstance(limits, dict):
        raise ConfigError(
            f"{where}: [{LIMITS}] must be a table, e.g. [{LIMITS}] max_approval = ..."
        )
    for key in limits:
        if key not in LIMIT_KEYS:
            raise ConfigError(f"{where}: in [{LIMITS}], {_unknown(key, LIMIT_KEYS)}")
    read = _LimitReader(path, limits)
    return ManagedPolicy(
        files=(path,),
        fixed=fixed,
        max_approval=read.max_approval(),
        forbidden_sandboxes=read.names("forbidden_sandboxes", SANDBOX_KINDS, "sandbox kind"),
        allowed_base_urls=read.urls(),
        allowed_mcp_servers=read.servers(),
        telemetry=read.telemetry(),
        disabled=read.names("disabled", tuple(FEATURES), "feature"),
    )


def _unknown(key: str, known: Sequence[str]) -> str:
    close = difflib.get_close_matches(key, list(known), n=1)
    if close:
        return f"unknown key '{key}'; did you mean '{close[0]}'?"
    return f"unknown key '{key}' (known keys: {', '.join(sorted(known))})."


class _LimitReader:
    """Reads and checks the ``[limits]`` of one file."""

    def __init__(self, path: Path, limits: Mapping[str, Any]) -> None:
        self.path = path
        self.limits = limits

    def _bad(self, key: str, problem: str) -> ConfigError:
        return ConfigError(f"managed settings file {self.path}: [{LIMITS}] {key} {problem}.")

    def _strings(self, key: str) -> list[str] | None:
        value = self.limits.get(key)
        if value is None:
            return None
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise self._bad(key, f"must be a list of strings, not {json.dumps(value, default=str)}")
        return value

    def max_approval(self) -> Pin[str] | None:
        value = self.limits.get("max_approval")
        if value is None:
            return None
        if value not in APPROVAL_ORDER:
            known = ", ".join(APPROVAL_ORDER)
            raise self._bad("max_approval", f"is {json.dumps(value)}; use one of {known}")
        return Pin(value, self.path)

    def names(self, key: str, known: Sequence[str], what: str) -> tuple[Pin[tuple[str, ...]], ...]:
        values = self._strings(key)
        if values is None:
            return ()
        for value in values:
            if value not in known:
                close = difflib.get_close_matches(value, list(known), n=1)
                hint = f"did you mean '{close[0]}'" if close else f"use {', '.join(known)}"
                raise self._bad(key, f"names the unknown {what} '{value}' ({hint})")
        return (Pin(tuple(dict.fromkeys(values)), self.path),)

    def urls(self) -> tuple[Pin[tuple[str, ...]], ...]:
        values = self._strings("allowed_base_urls")
        if values is None:
            return ()
        for value in values:
            try:
                check_base_url(value)
            except ValueError as exc:
                raise self._bad("allowed_base_urls", f"has '{value}': {exc}") from None
            if not value.strip():
                raise self._bad("allowed_base_urls", "has an empty URL")
        return (Pin(tuple(v.strip() for v in values), self.path),)

    def servers(self) -> tuple[Pin[tuple[ServerRule, ...]], ...]:
        key = "allowed_mcp_servers"
        value = self.limits.get(key)
        if value is None:
            return ()
        if not isinstance(value, list):
            raise self._bad(key, "must be a list of server names or tables")
        return (Pin(tuple(self._rule(entry) for entry in value), self.path),)

    def _rule(self, entry: Any) -> ServerRule:
        key = "allowed_mcp_servers"
        if isinstance(entry, str) and entry:
            return ServerRule(name=entry)
        if not isinstance(entry, dict) or not entry:
            raise self._bad(key, f"has {json.dumps(entry, default=str)}; give a name or a table")
        for part in entry:
            if part not in ("name", "command", "url"):
                raise self._bad(
                    key, f"has a table with the unknown key '{part}' (name, command, url)"
                )
        name, command, url = entry.get("name"), entry.get("command"), entry.get("url")
        if name is not None and not (isinstance(name, str) and name):
            raise self._bad(key, "has a name that is not a string")
        if command is not None and not (
            isinstance(command, list) and command and all(isinstance(w, str) for w in command)
        ):
            raise self._bad(key, 'has a command that is not a list of strings, e.g. ["uvx", "x"]')
        if url is not None and not (isinstance(url, str) and url):
            raise self._bad(key, "has a url that is not a string")
        return ServerRule(name=name, command=tuple(command) if command else None, url=url)

    def telemetry(self) -> Pin[ForcedTelemetry] | None:
        key = "telemetry"
        value = self.limits.get(key)
        if value is None:
            return None
        if isinstance(value, str):
            value = {"endpoint": value}
        if not isinstance(value, dict):
            raise self._bad(key, 'must be a table, e.g. { endpoint = "https://otel.example.com" }')
        for part in value:
            if part not in ("endpoint", "headers"):
                raise self._bad(key, f"has the unknown key '{part}' (endpoint, headers)")
        endpoint = value.get("endpoint")
        if not isinstance(endpoint, str) or not endpoint.strip():
            raise self._bad(key, "needs an endpoint, the OTLP/HTTP collector's URL")
        try:
            check_base_url(endpoint)
        except ValueError as exc:
            raise self._bad(key, f"has the endpoint '{endpoint}': {exc}") from None
        headers = value.get("headers", {})
        if not isinstance(headers, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in headers.items()
        ):
            raise self._bad(key, "has headers that are not a table of strings")
        forced = ForcedTelemetry(endpoint.strip(), tuple(sorted(headers.items())))
        return Pin(forced, self.path)
