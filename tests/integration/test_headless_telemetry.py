"""End to end: OpenTelemetry from a real headless run.

With ``OTEL_EXPORTER_OTLP_ENDPOINT`` pointing at a tiny OTLP/HTTP receiver on
loopback (it records each POST and decodes it with ``opentelemetry-proto``),
the run exports its session, turn, model request and tool call spans and its
counters. Without the variables, nothing of OpenTelemetry is even imported.
"""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("opentelemetry.proto")

from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue

from tests.integration.sse_server import ScriptedServer
from tests.integration.test_headless_e2e import run_clover, sglang
from tests.waiting import within

pytestmark = pytest.mark.integration


class Receiver(ThreadingHTTPServer):
    """Records the body of every POST, by path."""

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.posts: list[tuple[str, bytes]] = []

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class _Handler(BaseHTTPRequestHandler):
    server: Receiver

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        if self.headers.get("Content-Encoding") == "gzip":
            body = gzip.decompress(body)
        self.server.posts.append((self.path, body))
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    server = Receiver()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    return root


def value(any_value: AnyValue) -> Any:
    kind = any_value.WhichOneof("value")
    return getattr(any_value, kind) if kind else None


def enqueue_task(server: ScriptedServer) -> None:
    server.enqueue(
        sglang(lambda s: s.tool_call("shell", {"command": "echo hi; exit 3"})),
        sglang(lambda s: s.content("The command failed with 3.")),
    )


async def test_a_headless_run_exports_spans_and_counters_over_otlp_http(
    scripted_server: ScriptedServer,
    receiver: Receiver,
    repo: Path,
    tmp_path: Path,
    headless_argv: tuple[str, ...],
) -> None:
    enqueue_task(scripted_server)
    code, out, err = await run_clover(
        repo,
        "--task",
        "run it",
        *headless_argv,
        "--output-format",
        "json",
        home=tmp_path,
        extra_env={"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint},
    )
    assert code == 0, err
    result = json.loads(out)
    spans = []
    for path, body in receiver.posts:
        if path == "/v1/traces":
            request = ExportTraceServiceRequest.FromString(body)
            for resource_spans in request.resource_spans:
                for scope in resource_spans.scope_spans:
                    spans.extend(scope.spans)
    by_name: dict[str, list[Any]] = {}
    for span in spans:
        by_name.setdefault(span.name, []).append(span)
    assert sorted(by_name) == [
        "clover.model_request",
        "clover.session",
        "clover.tool_call",
        "clover.turn",
    ]
    [session] = by_name["clover.session"]
    session_attributes = {a.key: value(a.value) for a in session.attributes}
    assert session_attributes["clover.session_id"] == result["session_id"]
    [tool] = by_name["clover.tool_call"]
    tool_attributes = {a.key: value(a.value) for a in tool.attributes}
    assert tool_attributes["clover.tool.name"] == "shell"
    assert tool_attributes["clover.tool.exit_code"] == 3
    assert len(by_name["clover.model_request"]) == 2
    assert all(s.trace_id == session.trace_id for s in spans)
    request_tokens = sum(
        value(a.value)
        for s in by_name["clover.model_request"]
        for a in s.attributes
        if a.key == "gen_ai.usage.output_tokens"
    )
    assert request_tokens == result["usage"]["completion_tokens"]
    metrics = set()
    for path, body in receiver.posts:
        if path == "/v1/metrics":
            request = ExportMetricsServiceRequest.FromString(body)
            for resource_metrics in request.resource_metrics:
                for scope in resource_metrics.scope_metrics:
                    metrics |= {m.name for m in scope.metrics}
    assert {"clover.tokens", "clover.tool_calls"} <= metrics


CONSOLE = {"OTEL_TRACES_EXPORTER": "console", "OTEL_METRICS_EXPORTER": "console"}


@pytest.mark.parametrize("output_format", ["json", "stream-json"])
async def test_console_exporters_never_write_to_stdout(
    scripted_server: ScriptedServer,
    repo: Path,
    tmp_path: Path,
    output_format: str,
    headless_argv: tuple[str, ...],
) -> None:
    enqueue_task(scripted_server)
    code, out, err = await run_clover(
        repo,
        "--task",
        "run it",
        *headless_argv,
        "--output-format",
        output_format,
        home=tmp_path,
        extra_env=CONSOLE,
    )
    assert code == 0, err
    lines = [json.loads(line) for line in out.splitlines()]
    assert lines and lines[-1]["type"] == "result"
    assert len(lines) == 1 if output_format == "json" else len(lines) > 1
    # The spans went to stderr instead, whole.
    assert '"name": "clover.session"' in err and '"name": "clover.tool_call"' in err
    assert "clover.tokens" in err


OFF_PROBE = """
import sys
from clover_code.cli.main import run
code = run(sys.argv[1:])
loaded = sorted(m for m in sys.modules if m.split(".")[0] == "opentelemetry")
print("LOADED=" + ",".join(loaded), file=sys.stderr)
sys.exit(code)
"""


async def test_without_the_variables_nothing_of_opentelemetry_is_imported(
    scripted_server: ScriptedServer, repo: Path, tmp_path: Path, headless_argv: tuple[str, ...]
) -> None:
    import asyncio
    import os

    enqueue_task(scripted_server)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CLOVER_", "OTEL_"))}
    env.update(XDG_DATA_HOME=str(tmp_path / "data"), XDG_CONFIG_HOME=str(tmp_path / "config"))
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        OFF_PROBE,
        "--task",
        "run it",
        *headless_argv,
        "--output-format",
        "json",
        cwd=repo,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    out, err = await within(proc.communicate(), message="the headless probe to exit")
    assert proc.returncode == 0, err.decode()
    assert json.loads(out)["tool_calls"] == 1  # a full run, tools and all
    assert "LOADED=\n" in err.decode(), err.decode()
