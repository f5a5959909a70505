"""Settings an administrator pins: what the managed settings files allow.

``/etc/clover-code/managed.toml`` is read whenever it exists, and
``CLOVER_MANAGED_SETTINGS`` may name one more file (``managed_files`` reads
them). A file holds ordinary settings, which are then fixed, and a
``[limits]`` table. ``ManagedPolicy`` is what the files say together, the
stricter value winning where they differ; it answers, for each kind of
request, whether it is allowed, and if not, the clause the refusal ends
with: ``max_approval = "auto-edit" is set by your administrator in FILE``.

Every source is checked against it (``clover_code.config.settings``: flags,
the environment, the project's and the user's config files, the managed
files' own fixed values), and so is every change at run time (the session's
approval mode, the editor's MCP servers). A refused request is one
``ConfigError`` sentence, exit 2, before anything runs.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from clover_code.config.loosening import APPROVAL_ORDER
from clover_code.config.managed_values import (
    SECRET_SETTINGS,
    ForcedTelemetry,
    Pin,
    ServerRule,
    Source,
    refusal,
    server_target,
    shown,
    url_within,
)
from clover_code.errors import ConfigError
from clover_code.protocol import APPROVAL_MODES, ApprovalMode

__all__ = [
    "EXTRA_FILE_VARIABLE",
    "FEATURES",
    "LIMIT_KEYS",
    "SANDBOX_KINDS",
    "SYSTEM_FILE",
    "ManagedPolicy",
]

SYSTEM_FILE = Path("/etc/clover-code/managed.toml")
"""The administrator's file: always read when it exists, in every process."""

EXTRA_FILE_VARIABLE = "CLOVER_MANAGED_SETTINGS"
"""Names one more managed file, read after the system file. Whoever sets the
environment can point it anywhere, so it can only add limits: where it
differs from the system file, the stricter value (or the system file's) wins."""

SANDBOX_KINDS: tuple[str, ...] = ("auto", "docker", "bwrap", "none")

FEATURES: dict[str, str] = {
    "web_fetch": "the web_fetch tool is not offered to the model",
    "web_search": "the web_search tool is not offered, and search_url is refused",
    "mcp": "no MCP server starts: mcp_servers is refused; .mcp.json and an editor's "
    "servers are not started",
    "hooks": "no hook runs: hooks is refused, and so are plugins' hooks and an SDK "
    "program's hook functions",
    "plugins": "no plugin loads; clover-code plugin install and enable are refused",
}
"""What ``[limits] disabled`` may name, and what each name turns off."""

LIMIT_KEYS: tuple[str, ...] = (
    "max_approval",
    "forbidden_sandboxes",
    "allowed_base_urls",
    "allowed_mcp_servers",
    "telemetry",
    "disabled",
)
"""The keys of the ``[limits]`` table."""


def _set_in(setting: str, file: Path) -> str:
    return f"{setting} is set by your administrator in {file}"


def _listed(values: Iterable[str]) -> str:
    return "[" + ", ".join(json.dumps(v) for v in values) + "]"


@dataclass(frozen=True, slots=True)
class ManagedPolicy:
    """What the managed files pin and limit (empty: no managed file)."""

    files: tuple[Path, ...] = ()
    """The files read, the system file first."""
    fixed: Mapping[str, Pin[Any]] = field(default_factory=dict)
    """Ordinary settings the files fix (where both fix one, the system file's)."""
    max_approval: Pin[str] | None = None
    """The most permissive approval mode (the stricter of the files')."""
    forbidden_sandboxes: tuple[Pin[tuple[str, ...]], ...] = ()
    """Each file's list; a kind any of them names is forbidden."""
    allowed_base_urls: tuple[Pin[tuple[str, ...]], ...] = ()
    """Each file's list; a model server must be in every one."""
    allowed_mcp_servers: tuple[Pin[tuple[ServerRule, ...]], ...] = ()
    """Each file's list; an MCP server must match an entry of every one."""
    telemetry: Pin[ForcedTelemetry] | None = None
    """Export forced on (by either file; the system file's endpoint where both force one)."""
    disabled: tuple[Pin[tuple[str, ...]], ...] = ()
    """Each file's list; a feature any of them names is off."""

    # ---------------------------------------------------------------- approvals

    def approval_clause(self, mode: str) -> str | None:
        """Why approval ``mode`` is not allowed, or None when it is."""
        pin = self.max_approval
        if pin is None or mode not in APPROVAL_ORDER:
            return None
        if APPROVAL_ORDER.index(mode) <= APPROVAL_ORDER.index(pin.value):
            return None
        return _set_in(f"max_approval = {json.dumps(pin.value)}", pin.file)

    def approval_or(self, default: ApprovalMode) -> ApprovalMode:
        """``default``, or the most permissive mode allowed when ``default`` is looser."""
        if self.max_approval is None or self.approval_clause(default) is None:
            return default
        return self.approval_modes()[-1]

    def approval_modes(self) -> tuple[ApprovalMode, ...]:
        """The approval modes allowed, strictest first."""
        return tuple(m for m in APPROVAL_MODES if self.approval_clause(m) is None)

    def mode_change_refusal(self, mode: str, current: str) -> str | None:
        """The sentence refusing a switch from ``current`` to approval ``mode`` at run
        time (a key, ``/approval``, an editor's mode picker), or None when allowed."""
        clause = self.approval_clause(mode)
        if clause is None:
            return None
        return f"approval mode {mode} is refused because {clause}; it stays {current}."

    def refuse_approval(self, mode: str, source: Source) -> None:
        """Raise the refusal of approval ``mode`` from ``source``, if it is refused."""
        clause = self.approval_clause(mode)
        if clause is not None:
            raise ConfigError(refusal(source.names("approval", mode), clause))

    # ---------------------------------------------------------------- sandboxes

    def sandbox_clause(self, kind: str) -> str | None:
        """Why sandbox ``kind`` is not allowed, or None when it is."""
        for pin in self.forbidden_sandboxes:
            if kind in pin.value:
                return _set_in(f"forbidden_sandboxes = {_listed(pin.value)}", pin.file)
        return None

    def forbidden_kinds(self) -> frozenset[str]:
        """Every sandbox kind a file forbids."""
        return frozenset(kind for pin in self.forbidden_sandboxes for kind in pin.value)

    def refuse_host_terminal(self) -> None:
        """Raise the refusal of running commands in an editor's terminal (on the host)
        when ``none`` is forbidden."""
        clause = self.sandbox_clause("none")
        if clause is not None:
            raise ConfigError(
                refusal("--terminal (commands on this machine, as with sandbox none)", clause)
            )

    # ---------------------------------------------------------------- servers

    def base_url_clause(self, url: str) -> str | None:
        """Why model server ``url`` is not allowed, or None when it is."""
        for pin in self.allowed_base_urls:
            if not any(url_within(url, allowed) for allowed in pin.value):
                return _set_in(f"allowed_base_urls = {_listed(pin.value)}", pin.file)
        return None

    def mcp_server_clause(
        self, name: str, command: tuple[str, ...] | None, url: str | None
    ) -> str | None:
        """Why MCP server ``name`` may not start, or None when it may."""
        feature = self.feature_clause("mcp")
        if feature is not None:
            return feature
        for pin in self.allowed_mcp_servers:
            if not any(rule.matches(name, command, url) for rule in pin.value):
                shown = "[" + ", ".join(rule.shown() for rule in pin.value) + "]"
                return _set_in(f"allowed_mcp_servers = {shown}", pin.file)
        return None

    # ---------------------------------------------------------------- features

    def feature_clause(self, feature: str) -> str | None:
        """Why ``feature`` (a name of ``FEATURES``) is off, or None when it is on."""
        for pin in self.disabled:
            if feature in pin.value:
                return _set_in(f"disabled = {_listed(pin.value)}", pin.file)
        return None

    def disables(self, feature: str) -> bool:
        """Whether a managed file turns ``feature`` off."""
        return self.feature_clause(feature) is not None

    # ---------------------------------------------------------------- telemetry

    @property
    def forced_telemetry(self) -> ForcedTelemetry | None:
        """Where every session must export its telemetry; None when not forced."""
        return self.telemetry.value if self.telemetry is not None else None

    def telemetry_clause(self) -> str | None:
        """The clause naming forced telemetry export, or None when it is not forced."""
        pin = self.telemetry
        if pin is None:
            return None
        return _set_in(f"telemetry export to {pin.value.endpoint}", pin.file)

    def otel_refusal(self, environ: Mapping[str, str]) -> str | None:
        """The refusal of an ``OTEL_*`` variable that would turn forced export off or
        send it elsewhere, or None."""
        pin = self.telemetry
        clause = self.telemetry_clause()
        if pin is None or clause is None:
            return None
        forced = pin.value
        wanted = {
            "OTEL_EXPORTER_OTLP_ENDPOINT": {forced.endpoint.rstrip("/")},
            "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": {forced.signal_endpoint("traces")},
            "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT": {forced.signal_endpoint("metrics")},
            "OTEL_TRACES_EXPORTER": {"otlp"},
            "OTEL_METRICS_EXPORTER": {"otlp"},
            "OTEL_TRACES_SAMPLER": {"always_on", "parentbased_always_on"},
            "OTEL_SDK_DISABLED": {"false"},
        }
        for name, allowed in wanted.items():
            raw = environ.get(name, "").strip()
            if raw and raw.rstrip("/").lower() not in {a.lower() for a in allowed}:
                return refusal(f"{name}={raw}", clause)
        return None

    # ---------------------------------------------------------------- sources

    def refuse_values(
        self,
        values: Mapping[str, Any],
        source: Source,
        same: Callable[[str, Any, Any], bool],
    ) -> None:
        """Raise the refusal of the first value in ``values`` (one source's settings)
        that a managed file forbids; ``same(key, a, b)`` says whether two values of a
        setting are equal once read."""
        for key, value in values.items():
            # Where both managed files fix a setting, the system file's value wins (merge).
            pin = None if source.kind == "managed" else self.fixed.get(key)
            if pin is not None and not same(key, value, pin.value):
                pinned = key if key in SECRET_SETTINGS else f"{key} = {shown(pin.value)}"
                fixed = _set_in(pinned, pin.file)
                raise ConfigError(refusal(source.names(key, value), fixed))
            clause = self._value_clause(key, value)
            if clause is not None:
                raise ConfigError(refusal(source.names(key, value), clause))
            if key == "mcp_servers" and isinstance(value, Mapping):
                self._refuse_servers(value, source)
            elif key == "hooks" and _any_hook(value):
                feature = self.feature_clause("hooks")
                if feature is not None:
                    raise ConfigError(refusal(f"hooks in {source.where()}", feature))

    def _value_clause(self, key: str, value: Any) -> str | None:
        if not isinstance(value, str):
            return None
        if key == "approval":
            return self.approval_clause(value)
        if key == "sandbox":
            return self.sandbox_clause(value)
        if key == "base_url" and value.strip():
            return self.base_url_clause(value.strip())
        if key == "search_url" and value.strip():
            return self.feature_clause("web_search")
        return None

    def _refuse_servers(self, servers: Mapping[str, Any], source: Source) -> None:
        for name, entry in servers.items():
            if not isinstance(entry, Mapping) or entry.get("enabled") is False:
                continue
            command, url = server_target(entry)
            clause = self.mcp_server_clause(str(name), command, url)
            if clause is not None:
                raise ConfigError(refusal(f"MCP server '{name}' in {source.where()}", clause))

    def refuse_start(self, approval_mode: str, *, on_host_terminal: bool) -> None:
        """Raise the refusal of opening a session in ``approval_mode`` (or with commands
        in an editor's terminal), the check every session factory makes."""
        self.refuse_approval(approval_mode, Source("runtime"))
        if on_host_terminal:
            self.refuse_host_terminal()


def _any_hook(value: Any) -> bool:
    if not isinstance(value, Mapping):
        return False
    return any(isinstance(hooks, list) and hooks for hooks in value.values())
