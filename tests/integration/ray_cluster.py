"""A real Ray cluster on this machine for the tests: a head node and worker nodes, each
started with ``ray start`` as a user would.

Two copies of the suite may run at once on one machine, so everything here is
the cluster's own: a short temp dir (Ray's unix sockets live there, and their
paths are limited to about 107 characters), a free port for everything Ray
listens on, and a stop that kills only this cluster's processes (each ``ray
start`` runs in a new session, and its daemons and workers stay in it), never
``ray stop``, which stops every Ray process on the machine.

Ray replaces a loopback ``--node-ip-address`` with the machine's own address,
and its servers listen on all interfaces; the driver still connects through
127.0.0.1.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from tests.waiting import PATIENCE, missing, wait_until

ROOT = Path(__file__).resolve().parents[2]

_WORKER_PORTS = 16
"""Ports each node's raylet may give its workers (and a driver attached to it)."""

_WAIT_FOR_NODES = """
import sys, time, ray
ray.init(address=sys.argv[1], logging_level="ERROR", log_to_driver=False)
deadline = time.monotonic() + float(sys.argv[3])
while sum(1 for n in ray.nodes() if n["Alive"] and n["Resources"].get("CPU")) < int(sys.argv[2]):
    if time.monotonic() > deadline:
        sys.exit("the worker nodes never joined the cluster")
    time.sleep(0.1)
"""


def need_ray() -> None:
    """Skip when Ray is missing; under CI fail, since scripts/test installs the extra."""
    try:
        import ray  # noqa: F401
    except ImportError:
        missing("ray is not installed", "scripts/test installs the ray extra; CI must run this")


def free_ports(count: int) -> list[int]:
    """``count`` different TCP ports nothing listens on (on any interface) right now."""
    with contextlib.ExitStack() as stack:
        socks = [stack.enter_context(socket.socket()) for _ in range(count)]
        for sock in socks:
            sock.bind(("", 0))
        return [sock.getsockname()[1] for sock in socks]


@dataclass
class RayCluster:
    """A running cluster: its address, the folder it lives in and its processes' sessions."""

    root: Path
    env: dict[str, str]
    port: int = 0
    sessions: set[int] = field(default_factory=set)

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def scratch(self) -> Path:
        """The nodes' TMPDIR, where each Ray task makes its scratch folder."""
        return self.root / "scratch"

    def start_node(self, *args: str) -> None:
        """``ray start`` one node in its own session, with free ports for all it serves."""
        ports = free_ports(7 + _WORKER_PORTS)
        argv = [
            str(Path(sys.executable).parent / "ray"),
            "start",
            *args,
            "--node-ip-address=127.0.0.1",
            f"--node-manager-port={ports[0]}",
            f"--object-manager-port={ports[1]}",
            f"--dashboard-agent-listen-port={ports[2]}",
            f"--dashboard-agent-grpc-port={ports[3]}",
            f"--runtime-env-agent-port={ports[4]}",
            f"--metrics-export-port={ports[5]}",
            f"--worker-port-list={','.join(map(str, ports[7:]))}",
            f"--object-store-memory={80 * 1024 * 1024}",
            "--disable-usage-stats",
        ]
        if "--head" in args:
            argv += [
                f"--dashboard-port={ports[6]}",
                "--include-dashboard=false",
                f"--temp-dir={self.root / 'ray'}",
            ]
        proc = subprocess.Popen(
            argv,
            env=self.env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        self.sessions.add(proc.pid)
        out, _ = proc.communicate(timeout=PATIENCE)
        if proc.returncode != 0:
            raise AssertionError(f"ray start {' '.join(args)} failed:\n{out.decode()[-3000:]}")

    def wait_for_workers(self, count: int) -> None:
        """Return once ``count`` nodes with CPUs have joined."""
        check = subprocess.run(
            [sys.executable, "-c", _WAIT_FOR_NODES, self.address, str(count), str(PATIENCE)],
            env=self.env,
            capture_output=True,
            text=True,
            timeout=PATIENCE * 2,
        )
        assert check.returncode == 0, check.stderr[-3000:]

    def stop(self) -> None:
        """Kill this cluster's processes and remove its files.

        KILL, not TERM: Ray's daemons take many seconds over a graceful stop,
        and a test cluster has nothing to save.
        """

        def gone() -> bool:
            # again on every look: a raylet may have started a worker meanwhile
            for pid in session_pids(self.sessions):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            return not session_pids(self.sessions)

        wait_until(gone, message="the Ray processes to exit")
        shutil.rmtree(self.root, ignore_errors=True)


def session_pids(sessions: set[int]) -> list[int]:
    """The live processes in any of ``sessions``."""
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        state, _ppid, _group, session = stat.rsplit(")", 1)[1].split()[:4]
        if int(session) in sessions and state != "Z":
            pids.append(int(entry.name))
    return pids


def start_cluster(workers: int, home: Path) -> RayCluster:
    """A head node with no CPUs (so no task runs there) and ``workers`` nodes of 1 CPU."""
    root = Path(tempfile.mkdtemp(prefix="rt", dir="/tmp"))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CLOVER_", "RAY_"))}
    env.update(
        XDG_DATA_HOME=str(home / "data"),
        XDG_CONFIG_HOME=str(home / "config"),
        TMPDIR=str(root / "scratch"),
        # the workers import this checkout's clover_code, whatever is installed
        PYTHONPATH=os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p),
    )
    cluster = RayCluster(root=root, env=env)
    cluster.scratch.mkdir()
    try:
        cluster.port = free_ports(1)[0]
        cluster.start_node("--head", f"--port={cluster.port}", "--num-cpus=0")
        for _ in range(workers):
            cluster.start_node(f"--address={cluster.address}", "--num-cpus=1")
        cluster.wait_for_workers(workers)
    except BaseException:
        cluster.stop()
        raise
    return cluster
