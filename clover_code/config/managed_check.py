"""Reading the managed policy for a settings load, and checking what it fixes.

``checked_policy`` reads the managed files (``managed_files``), checks each
fixed value against the settings model (a bad one names the managed file and
key), checks the files' fixed values against the merged limits, the
``OTEL_*`` variables against forced telemetry, and that forced telemetry can
run here. ``SameSetting`` compares two values of one setting once read (a
variable's ``"20"`` and a file's ``20`` are the same value).

The model is passed in (``clover_code.config.settings.Settings``), which
imports this module.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ValidationError

from clover_code.config.managed import ManagedPolicy
from clover_code.config.managed_files import managed_paths, merged, read_managed_file
from clover_code.config.managed_values import SECRET_SETTINGS, Source, refusal
from clover_code.config.sources import explain
from clover_code.errors import ConfigError
from clover_code.redact import remember

__all__ = ["SameSetting", "checked_policy", "fixed_layers"]

_OTEL_MODULES = ("opentelemetry.sdk", "opentelemetry.exporter.otlp.proto.http")


class SameSetting:
    """Whether two values of a setting are equal once the model has read them."""

    def __init__(self, model: type[BaseModel]) -> None:
        self.model = model

    def read(self, key: str, value: Any) -> Any:
        """``value`` as the model reads it for setting ``key``."""
        return getattr(self.model(**{key: value}), key)

    def __call__(self, key: str, a: Any, b: Any) -> bool:
        try:
            return bool(self.read(key, a) == self.read(key, b))
        except ValidationError:
            return False  # a value the model refuses is not the fixed one


def checked_policy(environ: Mapping[str, str], model: type[BaseModel]) -> ManagedPolicy:
    """The managed policy in force for ``environ``; a mistake in a managed file, or a
    value it or the environment sets that the policy forbids, is a ``ConfigError``."""
    known = list(model.model_fields)
    policies = [read_managed_file(path, known) for path in managed_paths(environ)]
    same = SameSetting(model)
    for one in policies:
        values = {key: pin.value for key, pin in one.fixed.items()}
        try:
            model(**values)
        except ValidationError as exc:
            where = f"managed settings file {one.files[0]}"
            raise ConfigError(explain(exc, {}, [(where, values)], known)) from None
    policy = merged(policies)
    # Whatever a message later says, a secret a managed file holds never appears in it.
    remember(*(str(p.fixed[k].value) for p in policies for k in SECRET_SETTINGS if k in p.fixed))
    for one in policies:
        values = {key: pin.value for key, pin in one.fixed.items()}
        policy.refuse_values(values, Source("managed", one.files[0]), same)
    if policy.telemetry is not None:
        remember(*(value for _, value in policy.telemetry.value.headers))
        otel = policy.otel_refusal(environ)
        if otel is not None:
            raise ConfigError(otel)
        clause = policy.telemetry_clause()
        if clause is not None and not all(_importable(m) for m in _OTEL_MODULES):
            raise ConfigError(
                refusal("a run without the otel extra", clause)[:-1]
                + "; install it with: pip install 'clover-code[otel]'."
            )
    return policy


def fixed_layers(policy: ManagedPolicy) -> list[tuple[str, dict[str, Any]]]:
    """The fixed values as settings layers, one per file (system file first), named
    as a bad value's sentence names them."""
    layers: list[tuple[str, dict[str, Any]]] = []
    for path in policy.files:
        values = {k: pin.value for k, pin in policy.fixed.items() if pin.file == path}
        if values:
            layers.append((f"managed settings file {path}", values))
    return layers


def _importable(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:  # a parent package is missing
        return False
