"""End to end: managed settings refuse a run before anything runs, and force telemetry.

The managed file is added with ``CLOVER_MANAGED_SETTINGS``; the system file
(``/etc/clover-code/managed.toml``) is put in place in a mount namespace by
``test_managed_system_file.py``.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from tests.integration.sse_server import ScriptedServer
from tests.integration.test_headless_e2e import run_clover, sglang
from tests.waiting import need_program

pytestmark = pytest.mark.integration


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    return root


def managed_file(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "managed.toml"
    path.write_text(text)
    return path


async def test_a_headless_run_asking_for_more_is_refused_with_exit_2_before_anything_runs(
    scripted_server: ScriptedServer, repo: Path, tmp_path: Path
) -> None:
    managed = managed_file(tmp_path, '[limits]\nmax_approval = "auto-edit"\n')
    (repo / ".clover").mkdir()
    (repo / ".clover/config.toml").write_text('sandbox = "none"\n')
    code, out, err = await run_clover(
        repo,
        "--task",
        "delete everything",
        "--base-url",
        scripted_server.base_url,
        "--approval",
        "full-auto",
        "--output-format",
        "json",
        home=tmp_path,
        extra_env={"CLOVER_MANAGED_SETTINGS": str(managed)},
    )
    assert code == 2, err
    result = json.loads(out)
    assert result["status"] == "error" and result["exit_code"] == 2
    assert result["error"] == (
        '--approval full-auto is refused because max_approval = "auto-edit" is set by your '
        f"administrator in {managed}."
    )
    assert scripted_server.requests == []  # the model server was never asked anything
    assert result["session_id"] is None  # no session, no transcript


async def test_a_run_within_the_limits_goes_ahead(
    scripted_server: ScriptedServer, repo: Path, tmp_path: Path
) -> None:
    managed = managed_file(tmp_path, 'max_turns = 3\n[limits]\nmax_approval = "auto-edit"\n')
    scripted_server.enqueue(sglang(lambda s: s.content("Nothing to do.")))
    code, out, err = await run_clover(
        repo,
        "--task",
        "say hi",
        "--base-url",
        scripted_server.base_url,
        "--sandbox",
        "none",
        "--output-format",
        "json",
        home=tmp_path,
        extra_env={"CLOVER_MANAGED_SETTINGS": str(managed)},
    )
    assert code == 0, err
    assert json.loads(out)["result"] == "Nothing to do."


def _clover(*args: str, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "clover_code", *args],
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.parametrize(
    ("args", "clause"),
    [
        (("mcp-server", "--approval", "full-auto"), 'max_approval = "ask"'),
        (("mcp-server", "--sandbox", "none"), 'forbidden_sandboxes = ["none"]'),
        (("acp", "--terminal"), 'forbidden_sandboxes = ["none"]'),
        (
            ("batch", "tasks.jsonl", "--out", "out", "--approval", "auto-edit"),
            'max_approval = "ask"',
        ),
        (("sandbox", "run", "--sandbox", "none", "--", "true"), 'forbidden_sandboxes = ["none"]'),
    ],
    ids=["mcp-server-approval", "mcp-server-sandbox", "acp-terminal", "batch", "sandbox-run"],
)
def test_other_commands_refuse_a_forbidden_flag_at_start(
    repo: Path, tmp_path: Path, args: tuple[str, ...], clause: str
) -> None:
    managed = managed_file(
        tmp_path, '[limits]\nmax_approval = "ask"\nforbidden_sandboxes = ["none"]\n'
    )
    (repo / "tasks.jsonl").write_text('{"id": "t1", "repo": ".", "prompt": "hi"}\n')
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(tmp_path),
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
        "XDG_DATA_HOME": str(tmp_path / "data"),
        "CLOVER_MANAGED_SETTINGS": str(managed),
    }
    done = _clover(*args, env=env, cwd=repo)
    assert done.returncode == 2, done.stderr
    assert f"is refused because {clause} is set by your administrator in {managed}." in (
        done.stderr
    )
    assert not (repo / "out").exists()


async def test_forced_telemetry_is_exported_with_no_otel_variable_set(
    scripted_server: ScriptedServer, repo: Path, tmp_path: Path
) -> None:
    pytest.importorskip("opentelemetry.proto")
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
    )

    from tests.integration.test_headless_telemetry import Receiver

    receiver = Receiver()
    thread = threading.Thread(target=receiver.serve_forever, daemon=True)
    thread.start()
    try:
        managed = managed_file(
            tmp_path,
            f'[limits]\ntelemetry = {{ endpoint = "{receiver.endpoint}", '
            'headers = { "x-team" = "platform" } }\n',
        )
        scripted_server.enqueue(sglang(lambda s: s.content("Done.")))
        code, out, err = await run_clover(
            repo,
            "--task",
            "say done",
            "--base-url",
            scripted_server.base_url,
            "--sandbox",
            "none",
            "--output-format",
            "json",
            home=tmp_path,
            extra_env={"CLOVER_MANAGED_SETTINGS": str(managed)},
        )
    finally:
        receiver.shutdown()
        receiver.server_close()
    assert code == 0, err
    names = set()
    for path, body in receiver.posts:
        if path == "/v1/traces":
            for resource in ExportTraceServiceRequest.FromString(body).resource_spans:
                for scope in resource.scope_spans:
                    names |= {span.name for span in scope.spans}
    assert {"clover.session", "clover.turn"} <= names
    assert json.loads(out)["status"] == "success"


async def test_auto_passes_over_a_forbidden_docker_for_bubblewrap(
    scripted_server: ScriptedServer, repo: Path, tmp_path: Path
) -> None:
    need_program("bwrap", "bubblewrap")
    managed = managed_file(tmp_path, '[limits]\nforbidden_sandboxes = ["docker", "none"]\n')
    scripted_server.enqueue(
        sglang(lambda s: s.tool_call("shell", {"command": "echo inside"})),
        sglang(lambda s: s.content("Ran it.")),
    )
    code, out, err = await run_clover(
        repo,
        "--task",
        "run it",
        "--base-url",
        scripted_server.base_url,
        "--output-format",
        "stream-json",
        home=tmp_path,
        extra_env={"CLOVER_MANAGED_SETTINGS": str(managed)},
    )
    assert code == 0, err
    events = [json.loads(line) for line in out.splitlines()]
    [started] = [e for e in events if e["type"] == "session_started"]
    assert started["sandbox"] == "bwrap"
