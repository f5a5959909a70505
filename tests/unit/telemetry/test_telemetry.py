"""The OpenTelemetry sink: protocol events in, spans and counters out (the SDK's
in-memory exporter and metric reader), and when telemetry is on at all."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("opentelemetry.sdk")

from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from clover_code import protocol as p
from clover_code.telemetry.otel import OtelSink
from clover_code.telemetry.spans import telemetry_wanted


@pytest.fixture
def sink() -> tuple[OtelSink, InMemorySpanExporter, InMemoryMetricReader]:
    exporter = InMemorySpanExporter()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(exporter))
    reader = InMemoryMetricReader()
    return OtelSink(tracer_provider, MeterProvider(metric_readers=[reader])), exporter, reader


def a_session() -> list[p.Event]:
    """One turn: a response that calls the shell (exit 3), then a final answer."""
    return [
        p.SessionStarted(
            session_id="s1",
            cwd="/w",
            engine="remote",
            model="clover",
            sandbox="none",
            approval="full-auto",
            transcript="/t.jsonl",
        ),
        p.TurnStarted(turn=1, text="fix it"),
        p.ReasoningDelta(text="look"),
        p.BlockCommitted(block=0, token_count=32, steps=8),
        p.BlockCommitted(block=1, token_count=32, steps=8),
        p.UsageReport(
            prompt_tokens=100,
            completion_tokens=64,
            context_window=4096,
            tokens_per_forward=4.0,
            experts_per_layer=9.5,
        ),
        p.ToolCallStarted(
            call_id="c1", name="shell", kind="execute", arguments={"command": "x"}, summary="x"
        ),
        p.ToolCallFinished(
            call_id="c1",
            name="shell",
            status="error",
            result="exit 3",
            display=p.CommandRun(command="x", exit_code=3),
            duration=0.5,
        ),
        p.ContentDelta(text="done"),
        p.BlockCommitted(block=2, token_count=16, steps=2),
        p.UsageReport(prompt_tokens=180, completion_tokens=16, context_window=4096),
        p.TurnFinished(turn=1, status="completed", final_text="done", model_requests=2),
        p.SessionEnded(session_id="s1"),
    ]


def by_name(spans: tuple[ReadableSpan, ...], name: str) -> list[ReadableSpan]:
    return [s for s in spans if s.name == name]


def counter_points(reader: InMemoryMetricReader, name: str) -> dict[Any, int]:
    data = reader.get_metrics_data()
    assert data is not None
    points: dict[Any, int] = {}
    for resource in data.resource_metrics:
        for scope in resource.scope_metrics:
            for metric in scope.metrics:
                if metric.name == name:
                    for point in metric.data.data_points:
                        points[tuple(sorted(point.attributes.items()))] = int(point.value)
    return points


def test_spans_nest_and_carry_their_attributes(
    sink: tuple[OtelSink, InMemorySpanExporter, InMemoryMetricReader],
) -> None:
    telemetry, exporter, _ = sink
    for event in a_session():
        telemetry(event)
    spans = exporter.get_finished_spans()
    [session] = by_name(spans, "clover.session")
    [turn] = by_name(spans, "clover.turn")
    requests = by_name(spans, "clover.model_request")
    [tool] = by_name(spans, "clover.tool_call")
    assert session.attributes is not None and session.attributes["clover.model"] == "clover"
    assert turn.parent is not None and turn.parent.span_id == session.context.span_id
    assert turn.attributes == {
        "clover.turn": 1,
        "clover.turn.status": "completed",
        "clover.turn.model_requests": 2,
    }
    assert len(requests) == 2
    first, second = requests
    assert all(r.parent is not None and r.parent.span_id == turn.context.span_id for r in requests)
    assert first.attributes is not None and second.attributes is not None
    assert first.attributes["gen_ai.usage.input_tokens"] == 100
    assert first.attributes["gen_ai.usage.output_tokens"] == 64
    assert first.attributes["clover.blocks"] == 2
    assert first.attributes["clover.tokens_per_forward"] == 4.0
    assert first.attributes["clover.experts_per_layer"] == 9.5
    assert first.attributes["clover.time_to_first_block_s"] >= 0
    assert second.attributes["clover.blocks"] == 1
    assert "clover.tokens_per_forward" not in second.attributes
    assert "clover.experts_per_layer" not in second.attributes
    # the second request went out when the tool result came in
    assert tool.end_time is not None and second.start_time == tool.end_time
    assert tool.attributes == {
        "clover.tool.name": "shell",
        "clover.tool.kind": "execute",
        "clover.tool.status": "error",
        "clover.tool.duration_s": 0.5,
        "clover.tool.exit_code": 3,
    }
    assert tool.status.status_code == StatusCode.ERROR


def test_counters_add_tokens_and_tool_calls(
    sink: tuple[OtelSink, InMemorySpanExporter, InMemoryMetricReader],
) -> None:
    telemetry, _, reader = sink
    for event in a_session():
        telemetry(event)
    assert counter_points(reader, "clover.tokens") == {
        (("type", "prompt"),): 280,
        (("type", "completion"),): 80,
    }
    assert counter_points(reader, "clover.tool_calls") == {
        (("clover.tool.name", "shell"), ("clover.tool.status", "error")): 1
    }


def test_shutdown_ends_what_an_interruption_left_open(
    sink: tuple[OtelSink, InMemorySpanExporter, InMemoryMetricReader],
) -> None:
    telemetry, exporter, _ = sink
    for event in a_session()[:7]:  # stops while the tool runs
        telemetry(event)
    telemetry.shutdown()
    names = sorted(s.name for s in exporter.get_finished_spans())
    assert names == [
        "clover.model_request",
        "clover.session",
        "clover.tool_call",
        "clover.turn",
    ]
    left_open = [s for s in exporter.get_finished_spans() if s.name != "clover.model_request"]
    assert all(s.status.status_code == StatusCode.ERROR for s in left_open)


@pytest.mark.parametrize(
    ("env", "wanted"),
    [
        ({}, False),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}, True),
        ({"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://h/v1/traces"}, True),
        ({"OTEL_TRACES_EXPORTER": "console"}, True),
        ({"OTEL_TRACES_EXPORTER": "none", "OTEL_METRICS_EXPORTER": "none"}, False),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": ""}, False),
        ({"OTEL_SERVICE_NAME": "x"}, False),
    ],
)
def test_which_variables_turn_telemetry_on(env: dict[str, str], wanted: bool) -> None:
    assert telemetry_wanted(env) is wanted
