"""Docker plumbing for ``DockerSandbox``: the client, the container, its owner.

- ``docker_client``: a client that answered a ping, or one ``ToolError``.
- ``container_spec``: the locked-down container (see ``docker.py``).
- ``root_filter``: when commands run as uid 0, the seccomp filter
  (``seccomp.py``) that the runner installs on itself before it starts any
  command, so none can make a setuid or setgid file: the workspace is
  root's on the host, so such a file would be a setuid-root program there.
  It is mounted next to the runner (both are support files: nothing in the
  image changes) and its path is the runner's argument; the runner refuses
  to run commands as root without it. Docker's default seccomp profile stays
  in force: the two filters stack.
- ``RUNNER_COMMAND``: how the container runs ``runner.py``, mounted read-only
  at ``RUNNER_DIR`` with the modules of clover-code it imports
  (``proc/children.py``, ``runner_procs.py``, ``runner_filter.py``).
- owner labels and ``clean_stale_containers``: every sandbox container is
  labelled ``host:pid:start-time`` of the clover-code process that made it;
  one whose owner is gone on this host is removed by the next session.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import platform
import shutil
import socket
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from clover_code.errors import ToolError
from clover_code.proc import children
from clover_code.tools.sandbox.control_files import outside_paths, protected_paths
from clover_code.tools.sandbox.policy import SANDBOX_HOME, SandboxLimits, needs_setuid_filter
from clover_code.tools.sandbox.seccomp import setuid_filter

__all__ = [
    "DOCKER_DOWN",
    "FILTER_PATH",
    "LABEL",
    "RUNNER_COMMAND",
    "RUNNER_DIR",
    "clean_stale_containers",
    "container_spec",
    "docker_client",
    "remove_container",
    "root_filter",
    "short_error",
    "support_files",
]

RUNNER_DIR = "/opt/clover"
"""Where the runner and what it imports are mounted in the container."""
RUNNER_COMMAND = (
    "python3",
    "-I",
    "-c",
    f"import sys; sys.path.insert(0, {RUNNER_DIR!r}); import clover_runner; clover_runner.main()",
)
"""What runs ``runner.py`` in the container (its arguments follow)."""


def _part(name: str) -> str:
    """The text of the runner's file ``name`` in this package."""
    return Path(__file__).with_name(name).read_text(encoding="utf-8")


_RUNNER_FILES = {
    "clover_runner.py": _part("runner.py"),
    # Only the modules it imports: the image may hold a clover-code of its own.
    "clover_code/__init__.py": "",
    "clover_code/proc/__init__.py": "",
    "clover_code/proc/children.py": Path(children.__file__).read_text(encoding="utf-8"),
    "clover_code/tools/__init__.py": "",
    "clover_code/tools/sandbox/__init__.py": "",
    "clover_code/tools/sandbox/runner_procs.py": _part("runner_procs.py"),
    "clover_code/tools/sandbox/runner_filter.py": _part("runner_filter.py"),
}
"""``RUNNER_DIR``'s files."""
_RUNNER = "runner"
"""``RUNNER_DIR`` among the support files."""
FILTER_PATH = "/opt/clover-setuid-filter.bpf"
"""Where the setuid filter is mounted when commands run as uid 0 (see ``root_filter``)."""
_FILTER = "setuid-filter.bpf"

LABEL = "org.clover-code.sandbox"
"""Every sandbox container carries this label; its value is the owner."""

DOCKER_DOWN = (
    "Docker is not answering ({detail}); start it (e.g. `sudo systemctl start docker`) "
    "and try again. Nothing was run on this machine."
)


def docker_client(timeout: float = 10.0) -> Any:
    """A ``docker.DockerClient`` from the environment that answered a ping.

    Raises ``ToolError`` naming what to do when no daemon answers.
    """
    import docker

    try:
        client = docker.from_env(timeout=timeout)
        client.ping()
    except Exception as exc:
        raise ToolError(DOCKER_DOWN.format(detail=short_error(exc))) from None
    return client


def short_error(exc: BaseException) -> str:
    """The first line of an error from Docker or the connection to it, kept short."""
    # An APIError's explanation is the daemon's own message, without the URL.
    text = str(getattr(exc, "explanation", None) or exc).strip()
    text = text.splitlines()[0] if text else type(exc).__name__
    if any(s in text for s in ("Connection aborted", "Connection refused", "FileNotFoundError")):
        return "cannot connect to the Docker daemon"
    return text[:200]


def _start_time(pid: int) -> str:
    """The kernel's start time of ``pid`` (tells a live owner from a reused pid)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return "?"
    return stat.rpartition(")")[2].split()[19]


def remove_container(client: Any, container_id: str) -> None:
    """Remove a container and wait (a few seconds at most) until it is gone; errors ignored."""
    with contextlib.suppress(Exception):
        client.api.remove_container(container_id, force=True)
    # auto_remove may already be removing it: then the call above fails; wait for it.
    with contextlib.suppress(Exception):
        client.api.wait(container_id, timeout=5, condition="removed")


def _owner() -> str:
    pid = os.getpid()
    return f"{socket.gethostname()}:{pid}:{_start_time(pid)}"


def _owner_alive(owner: str) -> bool:
    host, _, rest = owner.partition(":")
    pid_text, _, started = rest.partition(":")
    if host != socket.gethostname() or not pid_text.isdigit():
        return True  # another machine's container: not ours to judge
    pid = int(pid_text)
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    return started in ("?", _start_time(pid))


def clean_stale_containers(client: Any) -> int:
    """Remove sandbox containers whose owning process is gone; returns how many."""
    removed = 0
    for container in client.containers.list(all=True, filters={"label": LABEL}):
        if _owner_alive(container.labels.get(LABEL, "")):
            continue
        with contextlib.suppress(Exception):
            container.remove(force=True)
            removed += 1
    return removed


def root_filter(user: tuple[int, int], machine: str | None = None) -> bytes | None:
    """The setuid filter the runner must install when commands run as ``user``.

    None when ``user`` is not root (no filter); raises ``ToolError`` when it is
    and ``machine`` (default: this one) has no filter, since then nothing would
    stop them.
    """
    if not needs_setuid_filter(user):
        return None
    program = setuid_filter(machine)
    if program is None:
        name = machine or platform.machine()
        msg = (
            f"the Docker sandbox cannot run commands as root on {name}: its filter against "
            "setuid files exists only for x86_64 and aarch64; run clover-code "
            "as a regular user, or on a workspace a regular user owns."
        )
        raise ToolError(msg)
    return program


def support_files(user: tuple[int, int]) -> Path:
    """The files mounted read-only into every container for ``user``: passwd, group,
    the runner's folder, and for root the setuid filter (``root_filter``).

    They depend only on the uid:gid and the files' contents, so they live in the
    user cache directory under a name made from both, shared by all sessions:
    nothing is left behind when a session is killed.
    """
    import platformdirs

    uid, gid = user
    files: dict[str, str | bytes] = {
        "passwd": _passwd(uid, gid),
        "group": "root:x:0:\n" + (f"sandbox:x:{gid}:\n" if gid else ""),
    }
    files |= {f"{_RUNNER}/{name}": text for name, text in _RUNNER_FILES.items()}
    program = root_filter(user)
    if program is not None:
        files[_FILTER] = program
    digest = hashlib.sha256(repr(sorted(files.items())).encode()).hexdigest()[:12]
    folder = Path(platformdirs.user_cache_dir("clover-code")) / "sandbox" / f"{uid}-{gid}-{digest}"
    if all((folder / name).is_file() for name in files):
        return folder
    folder.parent.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix=".new-", dir=folder.parent))
    for name, content in files.items():
        path = scratch / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content)
        path.chmod(0o644)
    for folder_path in [scratch, *(p for p in scratch.rglob("*") if p.is_dir())]:
        folder_path.chmod(0o755)  # the container's user reads them, whatever the umask
    try:
        scratch.rename(folder)
    except OSError:  # another session made it first
        shutil.rmtree(scratch, ignore_errors=True)
    return folder


def _passwd(uid: int, gid: int) -> str:
    """The container's /etc/passwd: root, and the ``sandbox`` user when it is another uid."""
    if uid == 0:  # root on a root-owned workspace: no second name for uid 0
        return f"root:x:0:0:root:{SANDBOX_HOME}:/bin/bash\n"
    return (
        "root:x:0:0:root:/root:/usr/sbin/nologin\n"
        f"sandbox:x:{uid}:{gid}:sandbox:{SANDBOX_HOME}:/bin/bash\n"
    )


def container_spec(
    api: Any,
    *,
    image: str,
    root: Path,
    user: tuple[int, int],
    network: bool,
    limits: SandboxLimits,
    path: str,
    protect: Iterable[str] = (),
) -> dict[str, Any]:
    """Keyword arguments for the low-level ``create_container``."""
    from docker.types import LogConfig, Mount

    uid, gid = user
    state = support_files(user)
    mounts = [
        Mount(str(root), str(root), type="bind"),
        Mount("/etc/passwd", str(state / "passwd"), type="bind", read_only=True),
        Mount("/etc/group", str(state / "group"), type="bind", read_only=True),
        Mount(RUNNER_DIR, str(state / _RUNNER), type="bind", read_only=True),
    ]
    command = list(RUNNER_COMMAND)
    if needs_setuid_filter(user):  # support_files wrote it; the runner installs it first
        mounts.append(Mount(FILTER_PATH, str(state / _FILTER), type="bind", read_only=True))
        command.append(FILTER_PATH)
    # .git and the control files, read-only: a mount point cannot be renamed,
    # removed or replaced.
    protected = protected_paths(root, protect) + outside_paths(root)
    mounts += [Mount(str(p), str(p), type="bind", read_only=True) for p in protected]
    home_opts = f"rw,nosuid,nodev,size={limits.home_mb}m,uid={uid},gid={gid},mode=0700"
    host_config = api.create_host_config(
        network_mode="bridge" if network else "none",
        cap_drop=["ALL"],
        security_opt=["no-new-privileges"],
        read_only=True,
        tmpfs={"/tmp": f"rw,nosuid,nodev,size={limits.tmp_mb}m,mode=1777", SANDBOX_HOME: home_opts},
        mounts=mounts,
        pids_limit=limits.pids,
        mem_limit=f"{limits.memory_mb}m",
        memswap_limit=f"{limits.memory_mb}m",
        nano_cpus=int(limits.cpus * 1e9),
        auto_remove=True,
        log_config=LogConfig(type="none"),
    )
    return {
        "image": image,
        "command": command,
        "user": f"{uid}:{gid}",
        "working_dir": str(root),
        "environment": {"PATH": path, "HOME": SANDBOX_HOME},
        "hostname": "sandbox",
        # With detach False the SDK also sets StdinOnce: when this session's
        # stream closes, even by a crash, the runner's stdin ends and the
        # container stops (and auto_remove deletes it).
        "stdin_open": True,
        "detach": False,
        "tty": False,
        "labels": {LABEL: _owner(), f"{LABEL}.workspace": str(root)},
        "host_config": host_config,
    }
