"""The Docker runner's setuid filter: installed before any command, or nothing runs.

``runner.py`` runs here on the host as a real subprocess, the way Docker
runs it in the container (``python3 -I runner.py [FILTER]``): given the
filter (``seccomp.py``) it installs it on itself before any command; given
one the kernel rejects, or as root given none, it sends one F frame with a
sentence and exits. Through real Docker, as root on a root-owned workspace,
that sentence is the command's error and nothing runs. What the filter
refuses in a working sandbox is ``test_sandbox_root.py``'s
``test_root_sandbox_leaves_no_setuid_file``.
"""

from __future__ import annotations

import json
import os
import select
import struct
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from clover_code.errors import ToolError
from clover_code.tools.sandbox import docker_setup, runner
from clover_code.tools.sandbox.docker import DockerSandbox
from clover_code.tools.sandbox.seccomp import setuid_filter
from tests.integration.sandbox_fixtures import LIMITS
from tests.waiting import PATIENCE

pytestmark = pytest.mark.integration

as_root = pytest.mark.skipif(
    os.getuid() != 0, reason="needs clover-code running as root on a root-owned workspace"
)

REJECTED = struct.pack("=HBBI", 0xFFFF, 0, 0, 0)
"""One instruction with an opcode no kernel accepts: prctl(PR_SET_SECCOMP) fails with EINVAL."""

REFUSAL = (
    "the Docker sandbox will not run commands as root: it could not install its filter "
    "against setuid files"
)

Frame = tuple[bytes, int, bytes]


@pytest.fixture
def program() -> bytes:
    """This machine's setuid filter; skips where there is none (not x86_64 or aarch64)."""
    compiled = setuid_filter()
    if compiled is None:
        pytest.skip("no setuid filter for this architecture")
    return compiled


@pytest.fixture
def run_runner() -> Iterator[list[subprocess.Popen[bytes]]]:
    """Runner processes started by a test; killed after it."""
    started: list[subprocess.Popen[bytes]] = []
    yield started
    for proc in started:
        proc.kill()
        proc.wait()


def _start(started: list[subprocess.Popen[bytes]], *args: str) -> subprocess.Popen[bytes]:
    proc = subprocess.Popen(
        [sys.executable, "-I", runner.__file__, *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    started.append(proc)
    return proc


def _frames_until(proc: subprocess.Popen[bytes], last: bytes) -> list[Frame]:
    """The runner's frames up to the first of kind ``last`` (or its exit)."""
    assert proc.stdout is not None
    fd = proc.stdout.fileno()
    data, frames = b"", []
    deadline = time.monotonic() + PATIENCE
    while True:
        while len(data) >= runner.FRAME.size:
            kind, cid, size = runner.FRAME.unpack_from(data)
            end = runner.FRAME.size + size
            if len(data) < end:
                break
            frames.append((kind, cid, data[runner.FRAME.size : end]))
            data = data[end:]
            if kind == last:
                return frames
        left = deadline - time.monotonic()
        assert left > 0, f"no {last!r} frame from the runner in {PATIENCE:g} s: {frames}"
        if select.select([fd], [], [], left)[0]:
            chunk = os.read(fd, 65536)
            if not chunk:
                return frames
            data += chunk


def _run(proc: subprocess.Popen[bytes], command: str, cwd: Path) -> tuple[str, dict[str, int]]:
    """Run ``command`` through the runner; its output and its X frame."""
    assert proc.stdin is not None
    request = {"op": "run", "id": 1, "cmd": command, "cwd": str(cwd), "timeout": 60}
    request["env"] = {"PATH": os.environ["PATH"]}
    proc.stdin.write(json.dumps(request).encode() + b"\n")
    proc.stdin.flush()
    frames = _frames_until(proc, b"X")
    assert frames[-1][0] == b"X", frames
    output = b"".join(body for kind, _, body in frames if kind == b"O")
    return output.decode(), json.loads(frames[-1][2])


def test_runner_installs_the_filter_before_any_command(
    program: bytes, tmp_path: Path, run_runner: list[subprocess.Popen[bytes]]
) -> None:
    (tmp_path / "filter.bpf").write_bytes(program)
    proc = _start(run_runner, str(tmp_path / "filter.bpf"))
    assert [kind for kind, _, _ in _frames_until(proc, b"R")] == [b"R"]
    output, done = _run(
        proc,
        "cp /bin/true prog && chmod 755 prog && echo chmod-ok; chmod u+s prog 2>&1; "
        "install -m 2755 /bin/true prog2 2>&1; exit 0",
        tmp_path,
    )
    assert done["code"] == 0 and "chmod-ok" in output, output
    assert output.count("Operation not permitted") == 2, output
    for name in ("prog", "prog2"):
        assert (tmp_path / name).stat().st_mode & 0o6000 == 0, name


def test_runner_refuses_when_the_kernel_rejects_the_filter(
    tmp_path: Path, run_runner: list[subprocess.Popen[bytes]]
) -> None:
    (tmp_path / "filter.bpf").write_bytes(REJECTED)
    proc = _start(run_runner, str(tmp_path / "filter.bpf"))
    frames = _frames_until(proc, b"R")
    assert [(kind, cid) for kind, cid, _ in frames] == [(b"F", 0)], frames
    sentence = frames[0][2].decode()
    assert sentence.startswith(REFUSAL) and "(prctl: Invalid argument)" in sentence
    assert sentence.count(". ") == 0 and sentence.endswith(".")
    assert proc.wait(PATIENCE) == 1


@as_root
def test_runner_as_root_without_a_filter_refuses(
    run_runner: list[subprocess.Popen[bytes]],
) -> None:
    proc = _start(run_runner)
    frames = _frames_until(proc, b"R")
    assert [kind for kind, _, _ in frames] == [b"F"], frames
    assert frames[0][2].decode().startswith(REFUSAL + " (no filter was given)")
    assert proc.wait(PATIENCE) == 1


@as_root
@pytest.mark.docker
async def test_docker_as_root_runs_nothing_when_the_filter_cannot_be_installed(
    tmp_path: Path,
    sandbox_image: str,
    docker_engine: object,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    root = tmp_path / "checkout"
    root.mkdir()
    assert root.stat().st_uid == 0
    # What a kernel that refuses the filter does (another architecture under
    # emulation, say): the real runner in the real container meets a real EINVAL.
    monkeypatch.setattr(docker_setup, "setuid_filter", lambda machine=None: REJECTED)
    box = DockerSandbox(root, image=sandbox_image, client=docker_engine, limits=LIMITS)
    try:
        for _ in range(2):  # every call: a fresh container refuses again
            with pytest.raises(ToolError) as caught:
                await box.exec("touch ran", timeout=30)
            assert str(caught.value).startswith(REFUSAL), caught.value
            assert "(prctl: Invalid argument)" in str(caught.value)
    finally:
        await box.close()
    assert not (root / "ran").exists()
