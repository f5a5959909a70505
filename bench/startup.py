"""Start-up: a one-step headless run and the app until ready, against an earlier commit.

    python bench/startup.py [--baseline 9572fb0] [--rounds 9] [--cache-dir DIR] [--no-app]

The peer is clover-code at ``--baseline`` (default 9572fb0, before the
start-up work). Both are installed the same way, each into its own
virtualenv in the cache dir (``--system-site-packages``, ``pip install -e
--no-deps``: how the development trees are installed), the baseline from
that commit's files (``git archive``), this tree as it is. They run side by side,
alternating, against one scripted OpenAI-compatible server on loopback
(``tests/integration/sse_server.py``, in this process), each with its own
home (its own caches and sessions), in the same small git repository:

- a one-step headless run: ``clover-code --task ... --sandbox none
  --output-format json``; the model answers at once, with no tool call. CPU
  is the process's user + system time with its children's (``wait4``);
- the app until ready: ``clover-code`` in a pseudo-terminal (120x36) until the
  session is open (the status bar shows the model's name instead of
  "connecting…"), then Ctrl+Q. CPU at that moment is read from ``/proc``
  (every thread's run time, and the children it has reaped).

One unmeasured run of each first (bytecode, caches); bytecode is written as
an installed package's would be. Medians over ``--rounds``. Targets: CPU of
the one-step run <= 0.6x the baseline's, CPU of the app until ready <= 0.7x.
Exit status 0 when both are met, 1 on a miss, 2 when one could not be
measured.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import fcntl
import os
import pty
import select
import signal
import statistics
import struct
import subprocess
import sys
import tempfile
import termios
import threading
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.targets import Targets, machine_load  # noqa: E402
from tests.integration.sse_server import (  # noqa: E402
    MODELS_PATH,
    RecordedRequest,
    ScriptedResponse,
    ScriptedServer,
    json_response,
    sse_response,
)
from tests.integration.stream_shapes import SGLangStream  # noqa: E402

MODEL = "startup-bench-model"
READY = MODEL.encode()
"""What the app draws in its status bar once the session is open."""
TASK = "Say done."
APP_TIMEOUT = 60.0
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


@dataclass(slots=True)
class Install:
    """One clover-code in its own virtualenv."""

    name: str
    venv: Path
    home: Path

    @property
    def command(self) -> str:
        return str(self.venv / "bin" / "clover-code")


@dataclass(slots=True)
class Sample:
    """What one run cost: CPU and wall seconds, peak RSS in MiB (0 when unknown)."""

    cpu: float
    wall: float
    rss_mb: float = 0.0


def _install(venv: Path, source: Path) -> None:
    if not (venv / "bin" / "python").exists():
        subprocess.run(
            [sys.executable, "-m", "venv", "--system-site-packages", str(venv)], check=True
        )
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "--no-deps", "-e"]
    subprocess.run([*pip, str(source)], check=True)


def _baseline_tree(cache: Path, commit: str) -> Path:
    """The files of ``commit`` (``git archive``: the repository is left as it is)."""
    tree = cache / f"tree-{commit}"
    if not (tree / "pyproject.toml").exists():
        tree.mkdir(parents=True, exist_ok=True)
        archive = subprocess.run(
            ["git", "-C", str(ROOT), "archive", "--format=tar", commit],
            check=True,
            capture_output=True,
        ).stdout
        subprocess.run(["tar", "-x", "-C", str(tree)], input=archive, check=True)
    return tree


def _workspace(parent: Path) -> Path:
    repo = parent / "repo"
    (repo / "src").mkdir(parents=True)
    (repo / "src" / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    (repo / "src" / "main.py").write_text("from calc import add\n\nprint(add(2, 3))\n")
    (repo / "README.md").write_text("# A small project\n")
    git = ["git", "-c", "user.name=bench", "-c", "user.email=bench@localhost"]
    subprocess.run([*git, "init", "-q"], cwd=repo, check=True)
    subprocess.run([*git, "add", "."], cwd=repo, check=True)
    subprocess.run([*git, "commit", "-qm", "start"], cwd=repo, check=True)
    return repo


def _env(home: Path) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("CLOVER_") and k not in ("PYTHONPATH", "PYTHONDONTWRITEBYTECODE")
    }
    env.update(
        HOME=str(home),
        XDG_DATA_HOME=str(home / "data"),
        XDG_CONFIG_HOME=str(home / "config"),
        XDG_CACHE_HOME=str(home / "cache"),
        XDG_STATE_HOME=str(home / "state"),
        CLOVER_API_KEY="bench-key",
        TERM="xterm-256color",
    )
    return env


def _serve() -> ScriptedServer:
    """The scripted server, running in a thread of this process."""
    server = ScriptedServer(models=[MODEL])

    def answer(request: RecordedRequest) -> ScriptedResponse:
        if request.path == MODELS_PATH:
            models = [{"id": MODEL, "object": "model", "owned_by": "bench"}]
            return json_response({"object": "list", "data": models})
        return sse_response(SGLangStream().content("Done.").chunks())

    server.responder = answer
    loop = asyncio.new_event_loop()
    loop.run_until_complete(server.start())
    threading.Thread(target=loop.run_forever, daemon=True).start()
    return server


def headless(install: Install, repo: Path, base_url: str) -> Sample:
    """One ``--task`` run to the end; its CPU (children included) from ``wait4``."""
    argv = [install.command, "--task", TASK, "--base-url", base_url]
    argv += ["--sandbox", "none", "--output-format", "json"]
    began = time.perf_counter()
    proc = subprocess.Popen(
        argv,
        cwd=repo,
        env=_env(install.home),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    output: list[bytes] = []
    readers = [
        threading.Thread(target=lambda s=stream: output.append(s.read()))  # type: ignore[misc]
        for stream in (proc.stdout, proc.stderr)
    ]
    for reader in readers:
        reader.start()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - began
    for reader in readers:
        reader.join()
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0 or b'"status":"success"' not in b"".join(output):
        raise RuntimeError(f"{install.name}: the run failed: {b''.join(output)[-800:]!r}")
    return Sample(usage.ru_utime + usage.ru_stime, wall, usage.ru_maxrss / 1024)


def _cpu_of(pid: int) -> float:
    """CPU seconds of a running process: its threads' run time and its reaped children's."""
    total_ns = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        with contextlib.suppress(OSError):
            total_ns += int((task / "schedstat").read_text().split()[0])
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    children_ticks = int(fields[13]) + int(fields[14])  # cutime, cstime
    return total_ns / 1e9 + children_ticks / CLOCK_TICKS


def app_ready(install: Install, repo: Path, base_url: str) -> Sample:
    """The app from its start until its session is open; then it is told to quit."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 36, 120, 0, 0))
    began = time.perf_counter()
    proc = subprocess.Popen(
        [install.command, "--base-url", base_url, "--sandbox", "none"],
        cwd=repo,
        env=_env(install.home),
        stdin=slave,
        stdout=slave,
        stderr=slave,
        start_new_session=True,
    )
    os.close(slave)
    seen = b""
    cpu = wall = 0.0
    try:
        while time.perf_counter() - began < APP_TIMEOUT:
            ready, _, _ = select.select([master], [], [], 0.05)
            if ready:
                try:
                    seen = (seen + os.read(master, 65536))[-4096:]
                except OSError:
                    break
                if READY in seen:
                    cpu, wall = _cpu_of(proc.pid), time.perf_counter() - began
                    break
            if proc.poll() is not None:
                break
        if not wall:
            raise RuntimeError(f"{install.name}: the app was not ready: {seen[-600:]!r}")
        os.write(master, b"\x11")  # Ctrl+Q
        deadline = time.perf_counter() + 10
        while proc.poll() is None and time.perf_counter() < deadline:
            if select.select([master], [], [], 0.05)[0]:
                with contextlib.suppress(OSError):
                    os.read(master, 65536)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        os.close(master)
    return Sample(cpu, wall)


def _median(samples: list[Sample], field: str) -> float:
    return statistics.median(getattr(s, field) for s in samples)


def _report(
    title: str, runs: dict[str, list[Sample]], names: tuple[str, str], with_rss: bool
) -> float:
    ours, peer = names
    print(f"{title} (medians of {len(runs[ours])})")
    header = f"{'':<26}{'CPU s':>9}{'wall s':>9}" + (f"{'peak RSS MiB':>14}" if with_rss else "")
    print(header)
    for name in names:
        line = f"  {name:<24}{_median(runs[name], 'cpu'):>9.3f}{_median(runs[name], 'wall'):>9.3f}"
        print(line + (f"{_median(runs[name], 'rss_mb'):>14.0f}" if with_rss else ""))
    return _median(runs[ours], "cpu") / _median(runs[peer], "cpu")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", default="9572fb0", help="the commit measured against")
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--cache-dir", type=Path, default=Path.home() / ".cache/clover-bench")
    parser.add_argument("--no-app", action="store_true", help="skip the app measurement")
    args = parser.parse_args()

    cache = args.cache_dir / "startup"
    cache.mkdir(parents=True, exist_ok=True)
    baseline = f"clover-code {args.baseline}"
    names = ("this tree", baseline)
    sources = {names[0]: ROOT, baseline: _baseline_tree(cache, args.baseline)}
    venvs = {names[0]: cache / "venv-tree", baseline: cache / f"venv-{args.baseline}"}
    server = _serve()
    targets = Targets()
    with tempfile.TemporaryDirectory() as tmp:
        installs = {}
        for name in names:
            _install(venvs[name], sources[name])
            installs[name] = Install(name, venvs[name], Path(tmp) / f"home-{len(installs)}")
        repo = _workspace(Path(tmp))
        print(f"peer: {baseline}; scripted server {server.base_url}; {machine_load()}")
        for install in installs.values():  # unmeasured: bytecode and caches
            headless(install, repo, server.base_url)
        runs: dict[str, list[Sample]] = {name: [] for name in names}
        for _ in range(args.rounds):
            for name in names:
                runs[name].append(headless(installs[name], repo, server.base_url))
        ratio = _report("one-step headless run", runs, names, with_rss=True)
        targets.check(
            "one-step headless run CPU <= 0.6x the baseline's",
            ratio <= 0.6,
            f"{ratio:.2f}x: {_median(runs[names[0]], 'cpu'):.3f} s vs "
            f"{_median(runs[baseline], 'cpu'):.3f} s",
        )
        if args.no_app:
            targets.check("the app ready, CPU <= 0.7x the baseline's", None, "skipped (--no-app)")
        else:
            for install in installs.values():
                app_ready(install, repo, server.base_url)
            app: dict[str, list[Sample]] = {name: [] for name in names}
            for _ in range(args.rounds):
                for name in names:
                    app[name].append(app_ready(installs[name], repo, server.base_url))
            ratio = _report("the app until its session is open", app, names, with_rss=False)
            wall = _median(app[names[0]], "wall") / _median(app[baseline], "wall")
            targets.check(
                "the app ready, CPU <= 0.7x the baseline's",
                ratio <= 0.7,
                f"{ratio:.2f}x: {_median(app[names[0]], 'cpu'):.3f} s vs "
                f"{_median(app[baseline], 'cpu'):.3f} s; wall {wall:.2f}x",
            )
        print(machine_load())
    return targets.exit_status()


if __name__ == "__main__":
    sys.exit(main())
