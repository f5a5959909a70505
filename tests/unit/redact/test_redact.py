"""One redaction function for every sink: what it hides, and each sink that uses it."""

from __future__ import annotations

import io
import json
import logging
import re
import secrets
from pathlib import Path

import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from clover_code import protocol as p
from clover_code.agent.open import without_secrets
from clover_code.agent.transcript import Transcript
from clover_code.cli.main import run
from clover_code.errors import EngineError
from clover_code.redact import (
    MASK,
    redact,
    redact_log_records,
    redacting,
    remember,
    without_agent_credentials,
)
from clover_code.redact import secrets as secrets_module
from clover_code.telemetry.otel import OtelSink
from clover_code.tools.sandbox.host import HostSandbox
from clover_code.tools.sandbox.policy import sandbox_env


def a_secret(prefix: str = "k") -> str:
    """A value no other test (or parallel run) uses."""
    return f"{prefix}-{secrets.token_hex(12)}"


@pytest.mark.parametrize(
    ("text", "hidden"),
    [
        ("cannot reach http://bob:pa55w0rd-x@models.example/v1 (refused)", "pa55w0rd-x"),
        ("clone https://ghs_abc123DEF456ghi789JKL@github.com/o/r.git", "ghs_abc123DEF456ghi789JKL"),
        ("HTTP 401: bad header Authorization: Bearer tok-0123456789abc", "tok-0123456789abc"),
        ('{"headers": {"Authorization": "Basic eC1hY2Nlc3M6c2VjcmV0"}}', "eC1hY2Nlc3M6c2VjcmV0"),
        ("proxy-authorization=Digest xyz-realm-value-123", "xyz-realm-value-123"),
        ("Cookie: session=abcdef123456; other=zzz", "session=abcdef123456"),
        ('"x-api-key": "key-7777777777"', "key-7777777777"),
        ("the server said: invalid token Bearer eyJhbGciOi.J9.sig", "eyJhbGciOi.J9.sig"),
        ("leaked ghp_0123456789abcdefghijABCDEFGHIJ here", "ghp_0123456789abcdefghijABCDEFGHIJ"),
        ("leaked github_pat_11ABCDEFG0123456789_abcdefghijkl", "github_pat_11ABCDEFG0123456789"),
        ("key sk-proj-0123456789abcdefABCDEF in the text", "sk-proj-0123456789abcdefABCDEF"),
    ],
)
def test_credential_shapes_are_masked(text: str, hidden: str) -> None:
    masked = redact(text, env={})
    assert hidden not in masked and MASK in masked


@pytest.mark.parametrize(
    "text",
    [
        "bearer tokens are described in RFC 6750",
        "Token counts: 100 prompt, 64 completion",
        "see /home/user/.config/clover-code/config.toml and https://example.com/docs",
        "the authorization step passed",
    ],
)
def test_ordinary_text_is_left_alone(text: str) -> None:
    assert redact(text, env={}) == text


@pytest.mark.parametrize(
    "text",
    [
        "AUTHORIZATION: Basic eC1hY2Nlc3M6c2VjcmV0",
        "Authorıation is not it, but authorıZation: token-123456789 is",  # dotless ı
        "X-API-\u212aEY: key-7777777777",  # the Kelvin sign is a K to IGNORECASE
        "SET-COOKIE: id=abcdef123456",
        "BEARER 0123456789abcdef and HTTPS://user:pass@example.com/",
        "ghs_abc123DEF456ghi789JKL then sk-0123456789abcdefABCD",
        "nothing to see: 401 unauthorized, see https://example.com/login",
    ],
)
def test_each_pattern_is_applied_wherever_it_could_match(text: str) -> None:
    # The patterns run only on texts holding their words (lowercased): that guard must
    # never skip a text the pattern would have masked.
    everywhere = text
    for _, source, replacement in secrets_module._RULES:
        everywhere = re.sub(source, replacement, everywhere)
    assert redact(text, env={}) == everywhere


def test_remembered_values_and_credential_variables_are_masked() -> None:
    key, token, plain = a_secret("key"), a_secret("tok"), a_secret("plain")
    remember(key)
    env = {"MY_SERVICE_TOKEN": token, "HOME_DIR_NAME": plain, "SSL_KEY_FILE": "/etc/ssl/k.pem"}
    text = f"a {key} b {token} c {plain} d /etc/ssl/k.pem"
    assert redact(text, env=env) == f"a {MASK} b {MASK} c {plain} d /etc/ssl/k.pem"


def test_an_error_sentence_never_carries_a_secret() -> None:
    key = a_secret()
    remember(key)
    error = EngineError(f"the server rejected the request (HTTP 401: bad key {key})")
    assert key not in str(error) and key not in error.message and MASK in str(error)


def test_a_base_url_password_stays_out_of_cannot_reach(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    password = a_secret("pw")
    url = f"http://mia:{password}@127.0.0.1:9/v1"
    code = run(["-C", str(tmp_path), "--task", "hi", "--base-url", url, "--output-format", "json"])
    out, err = capsys.readouterr()
    assert code == 3 and "cannot reach the model server at http://[REDACTED]@127.0.0.1:9" in err
    assert password not in out + err
    assert password not in json.loads(out)["error"] and "cannot reach" in json.loads(out)["error"]


def test_notices_and_error_events_are_masked_before_any_front_end() -> None:
    key = a_secret()
    remember(key)
    notice = without_secrets(p.Notice(level="warning", text=f"hook said {key}"))
    error = without_secrets(p.ErrorEvent(message=f"Authorization: Bearer {key}"))
    assert isinstance(notice, p.Notice) and key not in notice.text
    assert isinstance(error, p.ErrorEvent) and key not in error.message


def test_the_transcript_keeps_no_secret(tmp_path: Path) -> None:
    key = a_secret()
    remember(key)
    transcript = Transcript.create(tmp_path, {"id": "20260101-000000-abcdef", "cwd": "/r"})
    transcript.message({"role": "tool", "content": f"OPENAI_API_KEY={key}"})
    transcript.event(p.ErrorEvent(message=f"401 Bearer {key}").model_dump(mode="json"))
    transcript.close()
    text = transcript.path.read_text()
    assert key not in text and text.count(MASK) == 2
    assert all(json.loads(line) for line in text.splitlines())


def test_a_stream_writes_each_line_masked() -> None:
    key = a_secret()
    remember(key)
    inner = io.StringIO()
    out = redacting(inner)
    out.write(json.dumps({"type": "content_delta", "text": f"the key is {key}"}) + "\n")
    assert key not in inner.getvalue() and json.loads(inner.getvalue())["text"].endswith(MASK)
    assert redacting(out) is out


def test_log_records_are_masked_whatever_the_handler(caplog: pytest.LogCaptureFixture) -> None:
    key = a_secret()
    remember(key)
    redact_log_records()
    with caplog.at_level(logging.INFO, logger="clover_code.test_redact"):
        logging.getLogger("clover_code.test_redact").info("request failed: %s", f"key={key}")
    assert caplog.records and key not in caplog.text and MASK in caplog.text


def test_telemetry_errors_carry_no_secret() -> None:
    key = a_secret()
    remember(key)
    exporter = InMemorySpanExporter()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(exporter))
    sink = OtelSink(tracer_provider, MeterProvider())
    sink(
        p.SessionStarted(
            session_id="s1",
            cwd="/w",
            engine="remote",
            model="m",
            sandbox="none",
            approval="full-auto",
            transcript="/t.jsonl",
        )
    )
    sink(p.TurnStarted(turn=1, text="go"))
    sink(p.ToolCallStarted(call_id="c", name="shell", kind="execute", arguments={}, summary=""))
    sink(p.ToolCallFinished(call_id="c", name="shell", status="error", result=f"bad {key}"))
    sink(p.ErrorEvent(message=f"HTTP 401: Bearer {key}"))
    sink(p.TurnFinished(turn=1, status="failed", final_text="", model_requests=1))
    sink(p.SessionEnded(session_id="s1"))
    sink.shutdown()
    spans = exporter.get_finished_spans()
    dumped = " ".join(span.to_json() for span in spans)
    assert spans and key not in dumped and MASK in dumped


CREDENTIALS = (
    "CLOVER_API_KEY",
    "CLOVER_SEARCH_API_KEY",
    "OPENAI_API_KEY",
    "GITHUB_TOKEN",
    "GH_TOKEN",
    "ACTIONS_RUNTIME_TOKEN",
    "ACTIONS_ID_TOKEN_REQUEST_TOKEN",
    "ACTIONS_ID_TOKEN_REQUEST_URL",
    "INPUT_GITHUB_TOKEN",
)


async def test_host_commands_never_see_the_agents_credentials(tmp_path: Path) -> None:
    configured = a_secret("cfg")
    remember(configured)  # an api_key from a config file, also exported under its own name
    env = {name: a_secret(name.lower()) for name in CREDENTIALS}
    env |= {"MY_LLM_KEY_COPY": configured, "PATH": "/usr/bin:/bin", "KEEP_ME": "visible-1"}
    box = HostSandbox(tmp_path, env=env)
    try:
        result = await box.exec("env", timeout=30)
    finally:
        await box.close()
    assert result.exit_code == 0 and "KEEP_ME=visible-1" in result.output
    for name in CREDENTIALS:
        assert f"{name}=" not in result.output and env[name] not in result.output
    assert configured not in result.output


def test_sandbox_passthrough_never_carries_the_agents_credentials() -> None:
    configured = a_secret("cfg")
    remember(configured)
    host = {"ACTIONS_RUNTIME_URL": "https://pipelines.example/x", "NOTE": configured, "TZ": "UTC"}
    env = sandbox_env(["ACTIONS_RUNTIME_URL", "NOTE", "TZ"], host)
    assert "ACTIONS_RUNTIME_URL" not in env and "NOTE" not in env and env["TZ"] == "UTC"
    assert without_agent_credentials({"LANG": "C"}) == {"LANG": "C"}
