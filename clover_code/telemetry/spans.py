"""OpenTelemetry, switched on by the standard ``OTEL_*`` environment variables, or
forced on by an administrator's managed settings (``[limits] telemetry``).

Telemetry is an observer of the protocol event stream: each front end (headless,
the app, ACP) passes every ``Event`` it receives to the sink this module makes,
and the core loop knows nothing of it. When none of the variables is set,
nothing of OpenTelemetry is imported; when one is set but the ``otel`` extra is
not installed, the front end is told once and runs without it. The spans and
counters are made in ``clover_code.telemetry.otel``.
"""

from __future__ import annotations

import atexit
import os
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from clover_code import protocol as p
from clover_code.config.managed_values import ForcedTelemetry
from clover_code.errors import missing_extra

OTEL_VARIABLES = (
    "OTEL_EXPORTER_OTLP_ENDPOINT",
    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
    "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT",
    "OTEL_TRACES_EXPORTER",
    "OTEL_METRICS_EXPORTER",
)
"""Any of these, set and not ``none``, turns telemetry on."""

_NO_EXTRA = (
    "OpenTelemetry variables are set but the otel extra is not installed; "
    "install clover-code[otel] to export traces."
)
"""What the front end is told when the variables ask for telemetry it cannot export."""


class TelemetrySink(Protocol):
    """Fed every event of a session; exports spans and counters."""

    def __call__(self, event: p.Event) -> None: ...

    def shutdown(self) -> None:
        """Send what is left and stop (blocks up to a few seconds)."""


def telemetry_wanted(env: Mapping[str, str] | None = None) -> bool:
    """Whether the environment asks for OpenTelemetry."""
    env = os.environ if env is None else env
    values = [env.get(name, "").strip() for name in OTEL_VARIABLES]
    exporters = [env.get(n, "").strip().lower() for n in OTEL_VARIABLES[3:]]
    if exporters and all(e == "none" for e in exporters) and not any(values[:3]):
        return False
    return any(v and v.lower() != "none" for v in values)


def telemetry_from_environment(
    warn: Callable[[str], None] | None = None,
    env: Mapping[str, str] | None = None,
    forced: ForcedTelemetry | None = None,
) -> TelemetrySink | None:
    """The sink the ``OTEL_*`` variables ask for, or None (nothing imported) when off;
    ``forced`` (an administrator's collector) is always on and replaces them."""
    if forced is None and not telemetry_wanted(env):
        return None
    try:
        from clover_code.telemetry.otel import OtelSink
    except ImportError as exc:
        if forced is not None:  # the settings load refuses this first; it holds anyway
            raise missing_extra(exc, "telemetry export your administrator requires") from None
        if warn is not None:
            warn(_NO_EXTRA)
        return None
    return OtelSink.from_environment(forced)


_shared_providers: list[Any] = []
"""The process-wide providers of the app and ACP (made on first use, stopped at exit)."""


def session_telemetry(
    warn: Callable[[str], None] | None = None,
    env: Mapping[str, str] | None = None,
    forced: ForcedTelemetry | None = None,
) -> TelemetrySink | None:
    """A sink for one session of a long-lived front end (the app, ACP), or None when off
    (``forced``: as for ``telemetry_from_environment``).

    Sessions share the process's providers, which are flushed when it exits.
    """
    if forced is None and not telemetry_wanted(env):
        return None
    try:
        from clover_code.telemetry.otel import (
            OtelSink,
            environment_providers,
            shutdown_providers,
        )
    except ImportError as exc:
        if forced is not None:
            raise missing_extra(exc, "telemetry export your administrator requires") from None
        if warn is not None:
            warn(_NO_EXTRA)
        return None
    if not _shared_providers:
        _shared_providers.extend(environment_providers(forced))
        atexit.register(shutdown_providers, tuple(_shared_providers))
    tracer_provider, meter_provider = _shared_providers
    return OtelSink(tracer_provider, meter_provider)


def observed(emit: p.Emit, forced: ForcedTelemetry | None = None) -> p.Emit:
    """``emit``, with each event also fed to this session's telemetry when it is on
    (``forced``: an administrator's collector, always on).

    A telemetry failure turns it off for the session and never reaches the
    session: traces are not worth a broken turn.
    """
    sink = session_telemetry(forced=forced)
    if sink is None:
        return emit
    active = [sink]

    def emit_observed(event: p.Event) -> None:
        if active:
            try:
                active[0](event)
            except Exception:
                active.clear()
        emit(event)

    return emit_observed
