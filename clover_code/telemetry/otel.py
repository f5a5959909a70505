"""Spans and counters from the protocol event stream (imported only when telemetry is on).

Spans, nested as they happen:

- ``clover.session`` (``session_started`` to ``session_ended``): engine, model,
  sandbox, approval mode;
- ``clover.turn`` (``turn_started`` to ``turn_finished``): status, model requests;
- ``clover.model_request``: from the moment the request went out (the turn's
  start, or the last tool result before it) to its ``usage`` report: prompt and
  completion tokens, blocks, tokens per forward, tokens per second and the time
  to the first block;
- ``clover.tool_call`` (``tool_call_started`` to ``tool_call_finished``): name,
  kind, status, duration and, for commands, the exit code.

Counters: ``clover.tokens`` (by ``type``: prompt or completion) and
``clover.tool_calls`` (by tool name and status).
"""

from __future__ import annotations

import time
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.metrics import MeterProvider
from opentelemetry.trace import Span, Status, StatusCode, TracerProvider

from clover_code import __version__
from clover_code import protocol as p
from clover_code.config.managed_values import ForcedTelemetry
from clover_code.redact import redact

_OUTPUT = (p.BlockDraft, p.BlockCommitted, p.ReasoningDelta, p.ContentDelta)
"""Events that show a model response is streaming."""


def _exit_code(display: p.ToolDisplay | None) -> int | None:
    """A command's exit code from a tool result's display data (None: not a command, or killed)."""
    return display.exit_code if isinstance(display, p.CommandRun) else None


class OtelSink:
    """Turns the events of one process's sessions into spans and counters."""

    def __init__(
        self,
        tracer_provider: TracerProvider,
        meter_provider: MeterProvider,
        *,
        owned: tuple[TracerProvider, MeterProvider] | None = None,
    ) -> None:
        self._tracer = tracer_provider.get_tracer("clover_code", __version__)
        meter = meter_provider.get_meter("clover_code", __version__)
        self._tokens = meter.create_counter(
            "clover.tokens", unit="{token}", description="Tokens sent and generated"
        )
        self._tool_calls = meter.create_counter(
            "clover.tool_calls", unit="{call}", description="Tool calls by name and status"
        )
        self._owned = owned
        self._session: Span | None = None
        self._turn: Span | None = None
        self._request: Span | None = None
        self._request_sent = time.time_ns()
        self._first_block: int | None = None
        self._blocks = 0
        self._tools: dict[str, Span] = {}

    @classmethod
    def from_environment(cls, forced: ForcedTelemetry | None = None) -> OtelSink:
        """A sink with providers of its own, which its ``shutdown`` flushes and stops
        (``forced``: an administrator's collector, in place of the variables')."""
        providers = environment_providers(forced)
        return cls(*providers, owned=providers)

    def shutdown(self) -> None:
        """End spans left open (a crash, an interruption), then flush and stop the exporters."""
        now = time.time_ns()
        for span in [*self._tools.values(), self._request, self._turn, self._session]:
            if span is not None and span.is_recording():
                span.set_status(Status(StatusCode.ERROR, "ended without its closing event"))
                span.end(end_time=now)
        self._tools.clear()
        self._request = self._turn = self._session = None
        if self._owned is not None:
            shutdown_providers(self._owned)

    def __call__(self, event: p.Event) -> None:
        now = time.time_ns()
        if isinstance(event, p.SessionStarted):
            self._session = self._tracer.start_span(
                "clover.session",
                start_time=now,
                attributes={
                    "clover.session_id": event.session_id,
                    "clover.engine": event.engine,
                    "clover.model": event.model,
                    "clover.sandbox": event.sandbox,
                    "clover.approval": event.approval,
                    "clover.resumed": event.resumed,
                },
            )
        elif isinstance(event, p.TurnStarted):
            self._turn = self._start("clover.turn", self._session, now, {"clover.turn": event.turn})
            self._request_sent = now
        elif isinstance(event, _OUTPUT):
            self._output(event, now)
        elif isinstance(event, p.UsageReport):
            self._usage(event, now)
        elif isinstance(event, p.ToolCallStarted):
            attributes = {"clover.tool.name": event.name, "clover.tool.kind": event.kind}
            span = self._start("clover.tool_call", self._turn, now, attributes)
            self._tools[event.call_id] = span
        elif isinstance(event, p.ToolCallFinished):
            self._tool_finished(event, now)
        elif isinstance(event, p.ErrorEvent):
            error: dict[str, str | bool] = {"message": redact(event.message), "fatal": event.fatal}
            for open_span in (self._request, self._turn):
                if open_span is not None:
                    open_span.add_event("clover.error", error)
        elif isinstance(event, p.TurnFinished):
            self._turn_finished(event, now)
        elif isinstance(event, p.SessionEnded) and self._session is not None:
            self._session.end(end_time=now)
            self._session = None

    def _start(
        self, name: str, parent: Span | None, start: int, attributes: dict[str, Any]
    ) -> Span:
        ctx = trace.set_span_in_context(parent) if parent is not None else otel_context.Context()
        return self._tracer.start_span(name, context=ctx, start_time=start, attributes=attributes)

    def _output(self, event: p.Event, now: int) -> None:
        if self._request is None:
            self._request = self._start("clover.model_request", self._turn, self._request_sent, {})
            self._first_block, self._blocks = None, 0
        if isinstance(event, p.BlockCommitted):
            self._blocks += 1
            if self._first_block is None:
                self._first_block = now

    def _usage(self, event: p.UsageReport, now: int) -> None:
        if self._request is None:  # a response with no streamed output
            self._output(p.ReasoningDelta(text=""), now)
        span = self._request
        if span is None:  # unreachable: _output just opened it
            return
        attributes: dict[str, Any] = {
            "gen_ai.usage.input_tokens": event.prompt_tokens,
            "gen_ai.usage.output_tokens": event.completion_tokens,
            "clover.context_window": event.context_window,
            "clover.blocks": self._blocks,
        }
        if event.tokens_per_forward is not None:
            attributes["clover.tokens_per_forward"] = event.tokens_per_forward
        if event.experts_per_layer is not None:
            attributes["clover.experts_per_layer"] = event.experts_per_layer
        if event.tokens_per_second is not None:
            attributes["clover.tokens_per_second"] = event.tokens_per_second
        if self._first_block is not None:
            attributes["clover.time_to_first_block_s"] = (
                self._first_block - self._request_sent
            ) / 1e9
        span.set_attributes(attributes)
        span.end(end_time=now)
        self._request = None
        self._request_sent = now
        self._tokens.add(event.prompt_tokens, {"type": "prompt"})
        self._tokens.add(event.completion_tokens, {"type": "completion"})

    def _tool_finished(self, event: p.ToolCallFinished, now: int) -> None:
        labels = {"clover.tool.name": event.name, "clover.tool.status": event.status}
        self._tool_calls.add(1, labels)
        self._request_sent = now  # the next request goes out once the results are in
        span = self._tools.pop(event.call_id, None)
        if span is None:
            return
        span.set_attribute("clover.tool.status", event.status)
        span.set_attribute("clover.tool.duration_s", event.duration)
        code = _exit_code(event.display)
        if code is not None:
            span.set_attribute("clover.tool.exit_code", code)
        if event.status == "error":
            span.set_status(Status(StatusCode.ERROR, redact(event.result)[:200]))
        span.end(end_time=now)

    def _turn_finished(self, event: p.TurnFinished, now: int) -> None:
        if self._request is not None:  # the response was cut short
            self._request.set_status(Status(StatusCode.ERROR, f"turn {event.status}"))
            self._request.end(end_time=now)
            self._request = None
        for span in self._tools.values():
            span.end(end_time=now)
        self._tools.clear()
        if self._turn is None:
            return
        self._turn.set_attribute("clover.turn.status", event.status)
        self._turn.set_attribute("clover.turn.model_requests", event.model_requests)
        if event.status != "completed":
            self._turn.set_status(Status(StatusCode.ERROR, event.status))
        self._turn.end(end_time=now)
        self._turn = None


def environment_providers(
    forced: ForcedTelemetry | None = None,
) -> tuple[TracerProvider, MeterProvider]:
    """SDK providers with the exporters the ``OTEL_*`` variables choose (OTLP/HTTP default).

    The console exporters write to stderr, never stdout: stdout carries the
    json and stream-json output, ACP's and the MCP server's messages.
    ``forced`` (an administrator's managed settings) replaces the variables:
    OTLP/HTTP to its endpoint, every span sampled.
    """
    import os
    import sys

    if forced is not None:
        return _forced_providers(forced)

    from opentelemetry.sdk.metrics import MeterProvider as SdkMeterProvider
    from opentelemetry.sdk.metrics.export import (
        ConsoleMetricExporter,
        MetricReader,
        PeriodicExportingMetricReader,
    )
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider as SdkTracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter

    resource = Resource.create({"service.name": "clover-code", "service.version": __version__})
    tracer_provider = SdkTracerProvider(resource=resource)
    traces = os.environ.get("OTEL_TRACES_EXPORTER", "otlp").strip().lower() or "otlp"
    if traces == "console":
        tracer_provider.add_span_processor(BatchSpanProcessor(ConsoleSpanExporter(out=sys.stderr)))
    elif traces != "none":
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        tracer_provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    readers: list[MetricReader] = []
    metrics = os.environ.get("OTEL_METRICS_EXPORTER", "otlp").strip().lower() or "otlp"
    if metrics == "console":
        readers.append(PeriodicExportingMetricReader(ConsoleMetricExporter(out=sys.stderr)))
    elif metrics != "none":
        from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter

        readers.append(PeriodicExportingMetricReader(OTLPMetricExporter()))
    return tracer_provider, SdkMeterProvider(resource=resource, metric_readers=readers)


def _forced_providers(forced: ForcedTelemetry) -> tuple[TracerProvider, MeterProvider]:
    """OTLP/HTTP to the administrator's collector; the exporters' own environment
    variables cannot send it elsewhere or sample it away (explicit arguments win)."""
    from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.metrics import MeterProvider as SdkMeterProvider
    from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider as SdkTracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor
    from opentelemetry.sdk.trace.sampling import ALWAYS_ON

    headers = dict(forced.headers)
    resource = Resource.create({"service.name": "clover-code", "service.version": __version__})
    tracer_provider = SdkTracerProvider(resource=resource, sampler=ALWAYS_ON)
    spans = OTLPSpanExporter(endpoint=forced.signal_endpoint("traces"), headers=headers)
    tracer_provider.add_span_processor(BatchSpanProcessor(spans))
    metrics = OTLPMetricExporter(endpoint=forced.signal_endpoint("metrics"), headers=headers)
    reader = PeriodicExportingMetricReader(metrics)
    return tracer_provider, SdkMeterProvider(resource=resource, metric_readers=[reader])


def shutdown_providers(providers: tuple[TracerProvider, MeterProvider]) -> None:
    """Flush and stop SDK providers (API-only providers have nothing to stop)."""
    for provider in providers:
        stop = getattr(provider, "shutdown", None)
        if stop is not None:
            stop()
