"""Round-trip latency of sandboxed commands, against mini-swe-agent's Docker environment.

Times ``true`` and a command printing 1 MB, from the call to the result, in
clover-code's Docker, bubblewrap and host sandboxes, and in mini-swe-agent's
``DockerEnvironment`` (PyPI ``mini-swe-agent``, a ``docker exec`` CLI process
per command) running in its own virtualenv against the same image, all in
this run. Prints p50/p95 and the ratios; the targets are Docker p50 <= 50 ms and
at least 2x faster than mini-swe-agent, each printed with its verdict. Exit
status 0 when all are met, 1 on a miss, 2 when one could not be measured
(no Docker, or ``--skip-peer``).

    python bench/sandbox_exec.py [--runs 50] [--venv DIR] [--skip-peer]

Needs a Docker engine and the sandbox image (``clover-code sandbox build``).
The first run creates the virtualenv (default: the user cache dir) and
installs mini-swe-agent into it with pip.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
import venv
from collections.abc import Callable
from pathlib import Path

import platformdirs

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.targets import Targets
from clover_code.tools.sandbox.base import Sandbox
from clover_code.tools.sandbox.bwrap import BwrapSandbox
from clover_code.tools.sandbox.bwrap_identity import bwrap_problem
from clover_code.tools.sandbox.docker import DockerSandbox
from clover_code.tools.sandbox.docker_setup import docker_client
from clover_code.tools.sandbox.host import HostSandbox
from clover_code.tools.sandbox.image import image_present, image_tag

COMMANDS = {"true": "true", "1MB": "head -c 1000000 /dev/zero | tr '\\0' a"}
PEER = "mini-swe-agent"
TARGET_P50_MS = 50.0
TARGET_RATIO = 2.0

_PEER_SCRIPT = textwrap.dedent(
    """
    import json, sys, time
    from minisweagent.environments.docker import DockerEnvironment
    image, runs, commands = sys.argv[1], int(sys.argv[2]), json.loads(sys.argv[3])
    env = DockerEnvironment(image=image, cwd="/tmp", timeout=60)
    results = {}
    try:
        for name, command in commands.items():
            env.execute({"command": command})  # warm-up
            times = []
            for _ in range(runs):
                start = time.perf_counter()
                out = env.execute({"command": command})
                times.append(time.perf_counter() - start)
                assert out["returncode"] == 0, out
            results[name] = times
    finally:
        env.cleanup()
    print("RESULTS " + json.dumps(results))
    """
)


def percentile(values: list[float], q: float) -> float:
    """The ``q`` quantile (0..1) of ``values``, nearest rank."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


async def time_sandbox(box: Sandbox, runs: int) -> dict[str, list[float]]:
    """Per-call seconds for each command in ``box`` (after one warm-up call each)."""
    results: dict[str, list[float]] = {}
    for name, command in COMMANDS.items():
        await box.exec(command, timeout=60)
        times = []
        for _ in range(runs):
            start = time.perf_counter()
            result = await box.exec(command, timeout=60)
            times.append(time.perf_counter() - start)
            if result.exit_code != 0:
                raise SystemExit(f"{box.kind}: {command!r} failed: {result.output[-300:]}")
        results[name] = times
    return results


def peer_venv(path: Path) -> Path:
    """The virtualenv's python with mini-swe-agent installed (created on first use)."""
    python = path / "bin" / "python"
    probe = [str(python), "-c", "import minisweagent.environments.docker"]
    if python.exists() and subprocess.run(probe, capture_output=True).returncode == 0:
        return python
    print(f"creating {path} and installing {PEER} (first run only)...", flush=True)
    venv.EnvBuilder(with_pip=True, clear=True).create(path)
    subprocess.run([str(python), "-m", "pip", "install", "-q", PEER], check=True)
    return python


def time_peer(python: Path, image: str, runs: int) -> dict[str, list[float]]:
    """Per-call seconds for each command through mini-swe-agent's DockerEnvironment."""
    proc = subprocess.run(
        [str(python), "-c", _PEER_SCRIPT, image, str(runs), json.dumps(COMMANDS)],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "MSWEA_SILENT_STARTUP": "1"},
    )
    for line in proc.stdout.splitlines():
        if line.startswith("RESULTS "):
            data: dict[str, list[float]] = json.loads(line[len("RESULTS ") :])
            return data
    raise SystemExit(f"{PEER} run failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}")


def workspace() -> tuple[Path, Path]:
    """A scratch workspace (owned by an unprivileged uid when run as root); and its base."""
    base = Path(tempfile.mkdtemp(prefix="clover-bench-", dir="/tmp"))
    root = base / "ws"
    root.mkdir()
    if os.getuid() == 0:
        for path in (base, root):
            os.chown(path, 4242, 4242)
        base.chmod(0o755)
    return root, base


async def run(args: argparse.Namespace) -> int:
    client = docker_client()
    image = image_tag()
    if not image_present(client, image):
        raise SystemExit(f"the sandbox image {image} is missing: run `clover-code sandbox build`")
    root, base = workspace()
    results: dict[str, dict[str, list[float]]] = {}
    try:
        makers: dict[str, Callable[[], Sandbox]] = {
            "docker": lambda: DockerSandbox(root, image=image, client=client),
            "host": lambda: HostSandbox(root),
        }
        if bwrap_problem() is None:
            makers["bwrap"] = lambda: BwrapSandbox(root)
        for kind, make in makers.items():
            box = make()
            try:
                results[kind] = await time_sandbox(box, args.runs)
            finally:
                await box.close()
        if not args.skip_peer:
            python = peer_venv(args.venv)
            results[f"{PEER} docker"] = await asyncio.to_thread(time_peer, python, image, args.runs)
    finally:
        shutil.rmtree(base, ignore_errors=True)
    targets = Targets()
    report(results, args.runs, targets)
    return targets.exit_status()


def report(results: dict[str, dict[str, list[float]]], runs: int, targets: Targets) -> None:
    """Print the table, the ratios against mini-swe-agent and the targets' verdicts."""
    print(f"\nround trip per command, {runs} runs each (ms)")
    print(f"{'':24}" + "".join(f"{name + ' p50':>12}{name + ' p95':>12}" for name in COMMANDS))
    for who, times in results.items():
        cells = "".join(
            f"{percentile(t, 0.5) * 1000:12.1f}{percentile(t, 0.95) * 1000:12.1f}"
            for t in times.values()
        )
        print(f"{who:24}{cells}")
    peer = results.get(f"{PEER} docker")
    ours = results.get("docker")
    p50_target = f"clover docker p50 for `true` <= {TARGET_P50_MS:.0f} ms"
    print()
    if ours is None:
        targets.check(p50_target, None, "no Docker sandbox here")
    else:
        p50 = statistics.median(ours["true"]) * 1000
        targets.check(p50_target, p50 <= TARGET_P50_MS, f"{p50:.1f} ms")
    for name in COMMANDS:
        label = f"clover docker >= {TARGET_RATIO:.0f}x faster than {PEER} docker, {name}"
        if ours is None or peer is None:
            targets.check(label, None, "no Docker here, or --skip-peer")
            continue
        theirs, mine = statistics.median(peer[name]), statistics.median(ours[name])
        ratio = theirs / mine
        targets.check(
            label,
            ratio >= TARGET_RATIO,
            f"{ratio:.1f}x: p50 {mine * 1000:.1f} ms vs {theirs * 1000:.1f} ms",
        )
    if peer is None:
        return
    for kind in ("bwrap", "host"):
        if kind in results:
            ratio = statistics.median(peer["true"]) / statistics.median(results[kind]["true"])
            print(f"{PEER} docker / clover {kind}, true: {ratio:.1f}x")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=50, help="timed calls per command")
    parser.add_argument(
        "--venv",
        type=Path,
        default=Path(platformdirs.user_cache_dir("clover-code")) / "bench" / "mini-swe-agent",
        help="virtualenv for mini-swe-agent (created on first use)",
    )
    parser.add_argument("--skip-peer", action="store_true", help=f"do not run {PEER}")
    return asyncio.run(run(parser.parse_args()))


if __name__ == "__main__":
    sys.exit(main())
