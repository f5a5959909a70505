"""Where settings come from, below the model: config files, the environment, and
the sentence that explains a bad value.

``clover_code.config.settings`` stacks these layers under the command-line flags; this
module knows nothing of the settings' fields (the caller passes their names).
"""

from __future__ import annotations

import difflib
import json
import tomllib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from pydantic import ValidationError

from clover_code.errors import ConfigError

__all__ = [
    "ENV_PREFIX",
    "check_base_url",
    "env_value",
    "explain",
    "layered",
    "read_toml",
]

ENV_PREFIX = "CLOVER_"


def check_base_url(value: str | None) -> str | None:
    """A server address must be an http:// or https:// URL with a host (blank means unset)."""
    if value is None or not value.strip():
        return value
    url = value.strip()
    example = "e.g. http://localhost:30000/v1"
    if "://" not in url:
        raise ValueError(f"the URL has no scheme; write it with http:// or https://, {example}")
    parts = urlsplit(url)
    if parts.scheme.lower() not in ("http", "https"):
        raise ValueError(
            f"the scheme '{parts.scheme}' is not supported; use http:// or https://, {example}"
        )
    if not parts.hostname:
        raise ValueError(f"the URL has no host, {example}")
    return url


def layered(layers: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The values of ``layers`` (highest first) as one: a higher layer's value wins,
    and where both are tables they are merged key by key, to any depth."""
    merged: dict[str, Any] = {}
    for layer in layers:
        # Each lower layer is updated with what the higher ones gave so far.
        merged = _updated(dict(layer), merged)
    return merged


def _updated(lower: dict[str, Any], higher: Mapping[str, Any]) -> dict[str, Any]:
    for key, value in higher.items():
        below = lower.get(key)
        if isinstance(below, dict) and isinstance(value, dict):
            lower[key] = _updated(dict(below), value)
        else:
            lower[key] = value
    return lower


def read_toml(path: Path) -> dict[str, Any]:
    """Parse one config file, turning syntax errors into a ``ConfigError``."""
    try:
        with path.open("rb") as fh:
            data = tomllib.load(fh)
    except tomllib.TOMLDecodeError as exc:
        msg = f"config file {path} is not valid TOML ({exc}); fix or remove it."
        raise ConfigError(msg) from None
    except OSError as exc:
        raise ConfigError(f"config file {path} cannot be read ({exc.strerror}).") from None
    return data


def env_value(raw: str) -> Any:
    """Structured settings (rules, server tables) come from the environment as JSON."""
    if raw.lstrip()[:1] in ("{", "["):
        try:
            return json.loads(raw)
        except ValueError:
            return raw
    return raw


def explain(
    exc: ValidationError,
    cli: Mapping[str, Any],
    layers: list[tuple[str, dict[str, Any]]],
    known_keys: list[str],
    cli_kind: str = "flag",
) -> str:
    """One sentence per bad key, naming where the value came from (``cli_kind``:
    ``cli`` holds command-line flags, or a program's ``option``s)."""
    lines = []
    for err in exc.errors():
        key = str(err["loc"][0]) if err["loc"] else "?"
        # Inside a table ([models.fast], [mcp_servers.docs]) the whole path names the key.
        path = ".".join(str(part) for part in err["loc"]) or "?"
        if key in cli and cli_kind == "option":
            where = f"option {key}"
        elif key in cli:
            where = f"command-line option --{key.replace('_', '-')}"
        else:
            where = next((name for name, data in layers if key in data), "settings")
            if where == "environment":
                where = f"environment variable {ENV_PREFIX}{key.upper()}"
        if err["type"] == "extra_forbidden" and path != key:
            lines.append(f"{where}: unknown key '{path}'.")
        elif err["type"] == "extra_forbidden":
            close = difflib.get_close_matches(key, known_keys, n=1)
            if close:
                lines.append(f"{where}: unknown key '{key}'; did you mean '{close[0]}'?")
            else:
                known = ", ".join(sorted(known_keys))
                lines.append(f"{where}: unknown key '{key}' (known keys: {known}).")
        else:
            got = err.get("input")
            # A validator's own sentence, without pydantic's "Value error, " prefix.
            cause = (err.get("ctx") or {}).get("error") if err["type"] == "value_error" else None
            lines.append(f"{where}: bad value {got!r} for '{path}': {cause or err['msg']}.")
    return " ".join(lines)
