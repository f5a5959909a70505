"""The escape and fault suite: nothing a command does reaches past the sandbox.

Each case runs against Docker and bubblewrap where it applies, asserts the
stated outcome on the host, and checks that the next command still works.

Network cases are safe even if the sandbox were broken: the only addresses
they aim at are this machine's loopback (127.0.0.1, a listener the test owns,
and the Docker socket path); there is no host name, so no DNS lookup.
"""

from __future__ import annotations

import asyncio
import os
import re
import socket
import subprocess
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from clover_code.errors import ToolError
from clover_code.git.safe import run_git
from clover_code.tools.sandbox.base import Sandbox
from clover_code.tools.sandbox.output import omitted_bytes
from tests.integration.sandbox_fixtures import KINDS, Space, assert_alive, open_sandbox
from tests.waiting import PATIENCE, async_wait_until, env_flag, in_ci, need_program, within

# Per-process markers: two copies of the suite may run at once on one machine,
# and the host-wide process checks must only see this run's processes.
_RUN = f"{os.getpid():07d}"

pytestmark = pytest.mark.integration


# -- the filesystem ----------------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
async def test_cannot_write_etc(sandbox: Sandbox) -> None:
    name = f"clover-escape-{uuid.uuid4().hex}"
    result = await sandbox.exec(f"echo pwned > /etc/{name}", timeout=30)
    assert result.exit_code != 0
    assert not Path("/etc", name).exists()
    await assert_alive(sandbox)


@pytest.mark.parametrize("kind", KINDS)
async def test_cannot_write_the_host_home(sandbox: Sandbox) -> None:
    target = Path.home() / f"clover-escape-{uuid.uuid4().hex}"
    result = await sandbox.exec(f"echo pwned > {target}", timeout=30)
    assert result.exit_code != 0
    assert not target.exists()
    await assert_alive(sandbox)


@pytest.mark.parametrize("kind", KINDS)
async def test_cannot_write_through_a_symlink_out(sandbox: Sandbox, space: Space) -> None:
    target = space.outside / "target.txt"
    result = await sandbox.exec(f"ln -s {target} link && echo pwned > link", timeout=30)
    assert result.exit_code != 0
    assert target.read_text() == "original\n"
    await assert_alive(sandbox)


@pytest.mark.parametrize("kind", KINDS)
async def test_cannot_write_through_a_symlinked_parent(sandbox: Sandbox, space: Space) -> None:
    command = f"ln -s {space.outside} door && echo pwned > door/new.txt"
    result = await sandbox.exec(command, timeout=30)
    assert result.exit_code != 0
    assert not (space.outside / "new.txt").exists()
    assert sorted(p.name for p in space.outside.iterdir()) == ["target.txt"]
    await assert_alive(sandbox)


@pytest.mark.parametrize("kind", KINDS)
async def test_cannot_hardlink_a_host_file(sandbox: Sandbox, space: Space) -> None:
    target = space.outside / "target.txt"
    result = await sandbox.exec(f"ln {target} hard && echo pwned >> hard", timeout=30)
    assert result.exit_code != 0
    assert target.read_text() == "original\n"
    assert target.stat().st_nlink == 1
    await assert_alive(sandbox)


@pytest.mark.parametrize("kind", KINDS)
async def test_cannot_mknod(sandbox: Sandbox, space: Space) -> None:
    result = await sandbox.exec("mknod mem c 1 1", timeout=30)
    assert result.exit_code != 0
    assert not (space.root / "mem").exists()
    result = await sandbox.exec("mknod /tmp/disk b 8 0", timeout=30)
    assert result.exit_code != 0
    await assert_alive(sandbox)


# -- the network -------------------------------------------------------------------


@pytest.fixture
def listener() -> Iterator[tuple[int, list[str]]]:
    """A TCP listener on the host's 127.0.0.1; yields (port, peers that connected)."""
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    server.settimeout(0.2)
    peers: list[str] = []
    stop = threading.Event()

    def accept() -> None:
        while not stop.is_set():
            try:
                conn, addr = server.accept()
            except OSError:
                continue
            peers.append(addr[0])
            conn.sendall(b"HTTP/1.0 200 OK\r\nContent-Length: 7\r\n\r\nreached")
            conn.close()

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield server.getsockname()[1], peers
    finally:
        stop.set()
        thread.join()
        server.close()


def _reach(port: int) -> str:
    """Commands that try the host's loopback listener; each prints REACHED on success."""
    curl = f"curl -s --noproxy '*' --max-time 3 http://127.0.0.1:{port}/"
    tcp = f"timeout 3 bash -c 'exec 3<>/dev/tcp/127.0.0.1/{port}' && echo REACHED"
    return f"{curl}; echo; {tcp}; true"


@pytest.mark.parametrize("kind", KINDS)
async def test_no_network_interface_but_loopback(sandbox: Sandbox) -> None:
    result = await sandbox.exec("tail -n +3 /proc/net/dev | cut -d: -f1", timeout=30)
    assert result.output.split() == ["lo"]
    if sandbox.kind == "docker":  # bubblewrap shows the host's /sys read-only
        assert (await sandbox.exec("ls /sys/class/net", timeout=30)).output.split() == ["lo"]
    await assert_alive(sandbox)


@pytest.mark.parametrize("kind", KINDS)
async def test_host_loopback_is_unreachable(
    sandbox: Sandbox, listener: tuple[int, list[str]]
) -> None:
    port, peers = listener
    result = await sandbox.exec(_reach(port), timeout=30)
    assert "reached" not in result.output.lower()
    assert peers == []
    await assert_alive(sandbox)


async def test_bwrap_network_opt_in_reaches_the_listener(
    space: Space, request: pytest.FixtureRequest, listener: tuple[int, list[str]]
) -> None:
    """The control for the test above: with the network allowed, the same commands connect."""
    port, peers = listener
    box = open_sandbox("bwrap", space.root, request, network=True)
    try:
        result = await box.exec(_reach(port), timeout=30)
    finally:
        await box.close()
    assert "reached" in result.output and "REACHED" in result.output
    assert peers


@pytest.mark.docker
async def test_docker_network_opt_in_adds_an_interface(
    space: Space, request: pytest.FixtureRequest
) -> None:
    """The control for the interface test: with the network allowed there is more than lo."""
    box = open_sandbox("docker", space.root, request, network=True)
    try:
        result = await box.exec("tail -n +3 /proc/net/dev | cut -d: -f1", timeout=30)
    finally:
        await box.close()
    assert len(result.output.split()) > 1


@pytest.mark.parametrize("kind", KINDS)
async def test_no_docker_socket_or_agent(sandbox: Sandbox) -> None:
    command = (
        'for s in /var/run/docker.sock /run/docker.sock "$SSH_AUTH_SOCK" "$DOCKER_HOST"; do '
        '  [ -n "$s" ] && [ -e "$s" ] && echo "FOUND $s"; done; '
        "curl -s --max-time 3 --unix-socket /var/run/docker.sock http://127.0.0.1/version; "
        "echo; env | grep -E '^(SSH_AUTH_SOCK|DOCKER_HOST)=' ; true"
    )
    result = await sandbox.exec(command, timeout=30)
    assert "FOUND" not in result.output
    assert "ApiVersion" not in result.output
    assert "SSH_AUTH_SOCK" not in result.output and "DOCKER_HOST" not in result.output
    await assert_alive(sandbox)


# -- secrets -----------------------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
async def test_env_shows_no_host_secret(
    kind: str, space: Space, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = f"sk-test-{uuid.uuid4().hex}"
    monkeypatch.setenv("OPENAI_API_KEY", secret)
    monkeypatch.setenv("GITHUB_TOKEN", secret)
    monkeypatch.setenv("SSH_AUTH_SOCK", "/tmp/agent.sock")
    # Even a passthrough list that names them does not let them in.
    box = open_sandbox(kind, space.root, request, passthrough=["OPENAI_API_KEY", "GITHUB_TOKEN"])
    try:
        result = await box.exec("env; cat /proc/1/environ | tr '\\0' '\\n'", timeout=30)
        assert secret not in result.output
        assert "OPENAI_API_KEY" not in result.output and "SSH_AUTH_SOCK" not in result.output
        await assert_alive(box)
    finally:
        await box.close()


# -- runaway commands --------------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
async def test_sleep_forever_returns_after_the_timeout(sandbox: Sandbox) -> None:
    result = await within(
        sandbox.exec(f"sleep 1000.125{_RUN}", timeout=2), message="the timed-out command to return"
    )
    assert result.timed_out and result.exit_code is None
    await _assert_gone(sandbox, f"1000.125{_RUN}")
    await assert_alive(sandbox)


@pytest.mark.parametrize("kind", KINDS)
async def test_background_child_holding_stdout_cannot_hang_the_call(sandbox: Sandbox) -> None:
    result = await within(
        sandbox.exec(f"(sleep 999.125{_RUN} &); sleep 1000.375{_RUN}", timeout=2),
        message="the timed-out command to return despite its child holding stdout",
    )
    assert result.timed_out
    await _assert_gone(sandbox, f"999.125{_RUN}")
    await _assert_gone(sandbox, f"1000.375{_RUN}")
    await assert_alive(sandbox)


@pytest.mark.parametrize("kind", KINDS)
async def test_fork_bomb_is_contained(sandbox: Sandbox) -> None:
    result = await within(
        sandbox.exec("bomb() { bomb | bomb; }; bomb", timeout=8),
        message="the fork bomb to be stopped",
    )
    assert result.exit_code != 0  # killed at the timeout (None) or failed
    # The limit is what stopped it: a counting fork loop meets it well below a runaway.
    counted = await sandbox.exec(_FORK_COUNTER, timeout=30)
    assert counted.exit_code == 1
    forks = re.search(r"^forks (\d+)$", counted.output, re.MULTILINE)
    assert forks is not None and int(forks.group(1)) < 128, counted.output
    assert subprocess.run(["true"], check=False).returncode == 0  # the host can still fork
    await assert_alive(sandbox)
    if sandbox.kind == "docker":
        listing = (await sandbox.exec("ps -e --no-headers | wc -l", timeout=30)).output
        assert int(listing) < 10


_FORK_COUNTER = """python3 -c '
import os, time
n = 0
try:
    while True:
        if os.fork() == 0:
            time.sleep(30)
            os._exit(0)
        n += 1
except OSError:
    print("forks", n)
    raise SystemExit(1)
'"""


@pytest.mark.parametrize("kind", KINDS)
async def test_memory_hog_is_contained(sandbox: Sandbox) -> None:
    hog = "python3 -c 'blocks = [bytearray(64 << 20) for _ in range(64)]; print(\"all\")'"
    result = await sandbox.exec(hog, timeout=60)
    assert result.exit_code not in (0, None)
    assert "all" not in result.output.split()
    await assert_alive(sandbox)


class _PeakRss:
    """Samples this process's resident memory in a thread; ``growth`` is peak minus start."""

    def __init__(self) -> None:
        self.start = self._rss()
        self.peak = self.start
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    @staticmethod
    def _rss() -> int:
        with open("/proc/self/statm") as fh:
            return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")

    def _run(self) -> None:
        while not self._stop.wait(0.02):
            self.peak = max(self.peak, self._rss())

    def growth(self) -> int:
        self._stop.set()
        self._thread.join()
        return self.peak - self.start


@pytest.mark.slow
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize(
    ("command", "printed"),
    [
        (
            "echo FIRST; head -c 500000000 /dev/zero | tr '\\0' x | fold -w 100; echo; echo LAST",
            500_000_000 + 5_000_000,  # fold's newlines
        ),
        ("echo FIRST; head -c 100000000 /dev/zero | tr '\\0' y; echo; echo LAST", 100_000_000),
    ],
    ids=["500MB", "one-100MB-line"],
)
async def test_huge_output_keeps_memory_bounded(
    sandbox: Sandbox, command: str, printed: int
) -> None:
    streamed = [0]
    rss = _PeakRss()
    result = await sandbox.exec(
        command,
        timeout=240,
        on_output=lambda text: streamed.__setitem__(0, streamed[0] + len(text)),
    )
    growth = rss.growth()
    assert result.exit_code == 0
    assert result.truncated
    # The note counts what was dropped as read from the command, in bytes.
    dropped = omitted_bytes(result.output)
    assert abs(dropped - printed) < printed / 10, result.output[14_990:15_060]
    assert result.output.startswith("FIRST\n") and result.output.endswith("\nLAST\n")
    assert len(result.output) < 31_000
    assert streamed[0] < 1_100_000  # live output is bounded too
    assert growth < 150 * 2**20, f"memory grew by {growth / 2**20:.0f} MiB"
    await assert_alive(sandbox)


# -- host git ----------------------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
async def test_planted_git_programs_do_not_run_on_the_host(
    kind: str,
    space: Space,
    request: pytest.FixtureRequest,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    need_program("git")
    # The harness's own user config: identity, and (when the tests run as root)
    # trust in a workspace owned by the sandbox user.
    monkeypatch.setenv("HOME", str(tmp_path))
    (tmp_path / ".gitconfig").write_text(
        "[user]\n\tname = t\n\temail = t@example.invalid\n[safe]\n\tdirectory = *\n"
    )
    marker = space.outside / "MARKER"
    run_git("init", "-q", "-b", "main", cwd=space.root)
    if os.getuid() == 0:
        subprocess.run(["chown", "-R", f"{space.uid}:{space.gid}", str(space.root)], check=True)
    box = open_sandbox(kind, space.root, request)
    try:
        plant = f"""
            printf '#!/bin/sh\\ntouch {marker}\\ncat\\n' > tool.sh; chmod +x tool.sh
            mkdir -p hooks; cp tool.sh hooks/pre-commit; cp tool.sh hooks/post-commit
            cp tool.sh .git/hooks/pre-commit
            git config core.fsmonitor "$PWD/tool.sh"
            git config filter.evil.clean "$PWD/tool.sh"
            echo '* filter=evil diff=evil' > .gitattributes
            echo data > file.txt
            true
        """
        result = await box.exec(plant, timeout=30)
        # The sandbox keeps .git read-only as a whole.
        assert "pre-commit" in result.output and "config" in result.output, result.output
        assert not (space.root / ".git" / "hooks" / "pre-commit").exists()
        # Plant the config anyway, as if the agent had found another way in.
        with (space.root / ".git" / "config").open("a") as fh:
            fh.write(
                f"[core]\n\tfsmonitor = {space.root}/tool.sh\n\thooksPath = {space.root}/hooks\n"
                f'[filter "evil"]\n\tclean = {space.root}/tool.sh\n\trequired = true\n'
                f"[diff]\n\texternal = {space.root}/tool.sh\n"
            )
        for args in [
            ("status", "--porcelain"),
            ("add", "-A"),
            ("diff", "--cached"),
            ("commit", "-q", "-m", "checkpoint"),
            ("log", "-p", "-1"),
            ("diff", "HEAD"),
        ]:
            run_git(*args, cwd=space.root, check=False)
        assert not marker.exists()
        log = run_git("log", "-1", "--format=%s", cwd=space.root).stdout.strip()
        assert log == "checkpoint"
        # The control: plain git on the host would have run the planted programs.
        subprocess.run(["git", "-C", str(space.root), "status"], capture_output=True, check=False)
        assert marker.exists()
        await assert_alive(box)
    finally:
        await box.close()


# -- Docker going away -------------------------------------------------------------


@pytest.mark.docker
async def test_docker_daemon_stopped_mid_command(
    space: Space, request: pytest.FixtureRequest, docker_engine: Any, dockerd_to_myself: None
) -> None:
    if not (in_ci() or env_flag("SANDBOX_TESTS_MAY_STOP_DOCKERD")):
        pytest.skip(
            "stops the Docker daemon: runs under CI or with SANDBOX_TESTS_MAY_STOP_DOCKERD=1"
        )
    if os.getuid() != 0 or not Path("/var/run/docker.pid").exists():
        pytest.skip("needs root and a dockerd started by scripts/start-dockerd")
    marker = space.outside / "RAN-ON-HOST"
    box = open_sandbox("docker", space.root, request)
    await assert_alive(box)
    # Long enough that the daemon is gone before the command could end by itself.
    command = f"touch started; sleep 30; touch {marker}"
    task = asyncio.create_task(box.exec(command, timeout=PATIENCE))
    await async_wait_until((space.root / "started").exists, message="the command to start")
    pid = int(Path("/var/run/docker.pid").read_text())
    os.kill(pid, 15)
    try:
        with pytest.raises(ToolError, match="Docker sandbox stopped") as failure:
            await within(task, message="the call to fail once the daemon stopped")
        assert "nothing ran on this machine" in str(failure.value)
        await async_wait_until(lambda: not _process_alive(pid), message="dockerd to exit")
        with pytest.raises(ToolError, match="Docker is not answering"):
            await box.exec(f"touch {marker}", timeout=30)
        assert not marker.exists()
    finally:
        script = Path(__file__).resolve().parents[2] / "scripts" / "start-dockerd"
        subprocess.run([str(script), "60"], check=True)
    result = await box.exec("echo back", timeout=30)
    assert result.exit_code == 0 and result.output.startswith("back\n")
    assert "started again" in result.output
    await box.close()
    assert not marker.exists()


def _process_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


async def _assert_gone(box: Sandbox, marker: str) -> None:
    """No process with ``marker`` in its command line, in the sandbox or on the host.

    A killed process can take a moment to be reaped: poll with a deadline.
    """
    if box.kind == "docker":
        listing = ""
        for _ in range(int(PATIENCE)):
            listing = (await box.exec("ps -eo args", timeout=30)).output
            if marker not in listing:
                break
            await asyncio.sleep(1)
        assert marker not in listing, f"a process with {marker} is left in the container"

    def host_clear() -> bool:
        found = subprocess.run(["pgrep", "-f", marker], capture_output=True, check=False)
        return found.returncode == 1

    await async_wait_until(host_clear, message=f"no host process with {marker} to be left")
