"""Doctor rows for the administrator's managed settings: the files read, each
value they fix and each limit, with the file that sets it."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import Any

from clover_code.config.managed import EXTRA_FILE_VARIABLE, SYSTEM_FILE, ManagedPolicy
from clover_code.config.managed_values import SECRET_SETTINGS
from clover_code.doctor.report import Check
from clover_code.errors import ConfigError

__all__ = ["managed_checks"]

_AREA = "managed"


def managed_checks(environ: Mapping[str, str] | None = None) -> list[Check]:
    """One row per managed file, fixed setting and limit; a broken file, or a value the
    environment sets that the files forbid, is a failed row."""
    from clover_code.config.managed_check import checked_policy
    from clover_code.config.managed_files import managed_paths, read_policy
    from clover_code.config.settings import Settings

    env = os.environ if environ is None else environ
    try:
        policy = read_policy(managed_paths(env), list(Settings.model_fields))
    except ConfigError as exc:
        return [_failed(exc)]
    if not policy.files:
        named = "" if env.get(EXTRA_FILE_VARIABLE) else f" and {EXTRA_FILE_VARIABLE} is not set"
        return [Check(_AREA, "files", "info", f"none ({SYSTEM_FILE} does not exist{named})")]
    rows = [Check(_AREA, "file", "info", str(path)) for path in policy.files]
    rows += _rows(policy)
    try:
        checked_policy(env, Settings)
    except ConfigError as exc:
        rows.append(_failed(exc))
    return rows


def _failed(exc: ConfigError) -> Check:
    return Check(
        _AREA,
        "managed settings",
        "fail",
        exc.message,
        "ask your administrator, or fix what the sentence names",
    )


def _rows(policy: ManagedPolicy) -> list[Check]:
    rows: list[Check] = []
    for key, pin in sorted(policy.fixed.items()):
        value = "(a secret, not shown)" if key in SECRET_SETTINGS else _shown(pin.value)
        rows.append(Check(_AREA, key, "info", f"fixed to {value} in {pin.file}"))
    if policy.max_approval is not None:
        pin = policy.max_approval
        allowed = ", ".join(policy.approval_modes())
        rows.append(Check(_AREA, "max_approval", "info", f"{pin.value} ({allowed}) in {pin.file}"))
    for name, pins in (
        ("forbidden_sandboxes", policy.forbidden_sandboxes),
        ("allowed_base_urls", policy.allowed_base_urls),
        ("disabled", policy.disabled),
    ):
        for listed in pins:
            rows.append(
                Check(_AREA, name, "info", f"{_shown(list(listed.value))} in {listed.file}")
            )
    for rules in policy.allowed_mcp_servers:
        shown = "[" + ", ".join(rule.shown() for rule in rules.value) + "]"
        rows.append(Check(_AREA, "allowed_mcp_servers", "info", f"{shown} in {rules.file}"))
    if policy.telemetry is not None:
        forced = policy.telemetry.value
        headers = f", headers {', '.join(k for k, _ in forced.headers)}" if forced.headers else ""
        detail = f"forced: OTLP/HTTP to {forced.endpoint}{headers} in {policy.telemetry.file}"
        rows.append(Check(_AREA, "telemetry", "info", detail))
    return rows


def _shown(value: Any) -> str:
    try:
        return json.dumps(value)
    except TypeError:
        return str(value)
