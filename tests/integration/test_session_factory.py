"""``open_session``: what a failed start opened is released again, newest first, and
``Session.close`` runs every step even when one of them fails.

The failing steps are real: a model server that refuses connections, a sessions
directory that cannot be created, a front end whose output pipe is closed, a
sandbox that cannot run. Which steps were undone is read from the session
logger's "released the ..." lines, and where the resource can be seen from
outside (an MCP server process, a Docker container) it is checked there too.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest

from clover_code import protocol as p
from clover_code.agent.open import Session, SessionOptions, open_session
from clover_code.agent.transcript import TranscriptError
from clover_code.config.load import load_settings
from clover_code.config.settings import McpServerConfig, Settings
from clover_code.errors import EngineError, SandboxUnavailable
from tests.fakes import ScriptedBackend
from tests.integration.sandbox_fixtures import KINDS
from tests.integration.sse_server import ScriptedServer

pytestmark = pytest.mark.integration

SERVER = Path(__file__).with_name("mcp_echo_server.py")
DEADLINE = 30.0


def _settings(tmp_path: Path, **overrides: Any) -> Settings:
    values = {"sessions_dir": tmp_path / "sessions", "repo_map_tokens": 0, **overrides}
    return load_settings(values, user_config=tmp_path / "no-user-config.toml", env={})


def _released(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [
        r.getMessage().removeprefix("released the ")
        for r in caplog.records
        if r.name == "clover_code.session" and r.getMessage().startswith("released the ")
    ]


def _echo_server(tag: str) -> dict[str, McpServerConfig]:
    # The tag on the command line finds the server's process from outside.
    return {"echo": McpServerConfig(command=sys.executable, args=[str(SERVER), f"--tag={tag}"])}


def _processes_with(tag: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if tag.encode() in cmdline:
            found.append(int(entry.name))
    return found


async def _until_gone(tag: str) -> None:
    loop = asyncio.get_running_loop()
    end = loop.time() + DEADLINE
    while _processes_with(tag) and loop.time() < end:
        await asyncio.sleep(0.05)
    assert _processes_with(tag) == [], f"the MCP server {tag} is still running"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    (root / "app.py").write_text("print('hi')\n")
    return root


@pytest.fixture
def debug_log(caplog: pytest.LogCaptureFixture) -> pytest.LogCaptureFixture:
    caplog.set_level(logging.DEBUG, logger="clover_code.session")
    return caplog


@pytest.mark.parametrize("kind", KINDS)
async def test_an_unreachable_server_after_the_sandbox_opened_releases_the_sandbox(
    kind: str,
    repo: Path,
    tmp_path: Path,
    closed_port_url: str,
    debug_log: pytest.LogCaptureFixture,
    request: pytest.FixtureRequest,
) -> None:
    extra: dict[str, Any] = {}
    if kind == "docker":
        extra["sandbox_image"] = request.getfixturevalue("sandbox_image")
    else:
        request.getfixturevalue("bwrap_works")
    settings = _settings(tmp_path, sandbox=kind, base_url=closed_port_url, **extra)
    events: list[p.Event] = []
    with pytest.raises(EngineError):
        await open_session(settings, repo, SessionOptions(emit=events.append, strict_sandbox=True))
    assert _released(debug_log) == ["sandbox"]
    assert not (tmp_path / "sessions").exists()  # no transcript was started
    if kind == "docker":
        from clover_code.tools.sandbox.docker_setup import LABEL

        client = request.getfixturevalue("docker_engine")
        left = client.containers.list(
            all=True, filters={"label": f"{LABEL}.workspace={repo.resolve()}"}
        )
        assert left == []


async def test_a_sandbox_that_cannot_run_stops_the_start_before_the_engine(
    repo: Path,
    tmp_path: Path,
    scripted_server: ScriptedServer,
    debug_log: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-docker.sock")
    settings = _settings(tmp_path, sandbox="docker", base_url=scripted_server.base_url)
    with pytest.raises(SandboxUnavailable):
        await open_session(settings, repo, SessionOptions(emit=lambda e: None, strict_sandbox=True))
    assert scripted_server.requests == []  # the engine was never asked
    assert _released(debug_log) == []


async def test_a_transcript_that_cannot_be_created_releases_sandbox_and_engine(
    repo: Path,
    tmp_path: Path,
    scripted_server: ScriptedServer,
    debug_log: pytest.LogCaptureFixture,
) -> None:
    blocked = tmp_path / "not-a-directory"
    blocked.write_text("a file where the sessions directory should be\n")
    settings = _settings(
        tmp_path, sandbox="none", base_url=scripted_server.base_url, sessions_dir=blocked
    )
    with pytest.raises(TranscriptError):
        await open_session(settings, repo, SessionOptions(emit=lambda e: None))
    assert scripted_server.requests  # the engine was reached and checked first
    assert _released(debug_log) == ["sandbox", "engine"]


async def test_a_failure_after_mcp_started_stops_the_mcp_server(
    repo: Path,
    tmp_path: Path,
    scripted_server: ScriptedServer,
    debug_log: pytest.LogCaptureFixture,
) -> None:
    tag = uuid.uuid4().hex
    settings = _settings(
        tmp_path, sandbox="none", base_url=scripted_server.base_url, mcp_servers=_echo_server(tag)
    )
    # A front end whose output pipe was closed: announcing the session fails.
    read_end, write_end = os.pipe()
    os.close(read_end)
    out = os.fdopen(write_end, "w", buffering=1)

    def emit(event: p.Event) -> None:
        out.write(event.model_dump_json() + "\n")

    try:
        with pytest.raises(BrokenPipeError):
            await open_session(settings, repo, SessionOptions(emit=emit))
    finally:
        with pytest.raises(BrokenPipeError):
            out.close()
    assert _released(debug_log) == [
        "language servers",
        "MCP servers",
        "transcript",
        "sandbox",
        "engine",
    ]
    await _until_gone(tag)


class CloseFails(ScriptedBackend):
    """A fake engine whose release fails (a server that broke the connection badly)."""

    async def aclose(self) -> None:
        raise RuntimeError("the engine could not be released")


async def test_close_runs_every_step_when_one_fails(
    repo: Path, tmp_path: Path, debug_log: pytest.LogCaptureFixture
) -> None:
    tag = uuid.uuid4().hex
    settings = _settings(tmp_path, sandbox="none", mcp_servers=_echo_server(tag))
    events: list[p.Event] = []
    session: Session = await open_session(
        settings, repo, SessionOptions(emit=events.append, backend=CloseFails([]))
    )
    assert _processes_with(tag)  # the MCP server runs
    with pytest.raises(RuntimeError, match="could not be released"):
        await session.close()
    # Before the failing step and after it, every step ran.
    assert _released(debug_log) == [
        "background agents",
        "background jobs",
        "MCP servers",
        "language servers",
        "sandbox",
        "earlier engines",
        "end event",
        "transcript",
    ]
    await _until_gone(tag)
    assert isinstance(events[-1], p.SessionEnded)
    last = session.transcript.path.read_text().splitlines()[-1]
    assert '"session_ended"' in last
