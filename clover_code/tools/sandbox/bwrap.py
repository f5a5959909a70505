"""``BwrapSandbox``: shell commands under bubblewrap, for machines without Docker.

Each command is its own ``bwrap`` process:

- the host's root filesystem read-only; the workspace read-write at its own
  path, with ``.git`` and the control files read-only (``control_files``);
  /tmp a private tmpfs; /home, /root, the user's home and /run hidden behind
  empty read-only tmpfs (so no dotfile credentials, Docker socket or SSH agent
  socket is reachable), and so is every top-level directory that is not the
  system's (``/srv``, ``/mnt``, other people's projects); HOME a private tmpfs
  at /home/sandbox;
- new user, pid, network (unless ``network=True``), ipc and uts namespaces,
  every capability dropped, a new session, ``--die-with-parent``;
- the environment is ``policy.sandbox_env`` only; limits are rlimits set
  before the command: processes (``ulimit -u``, counted inside the sandbox's
  user namespace) and data size per process (``ulimit -d``);
- run as the host user, or as the workspace owner when clover-code is root.
  A root-owned workspace with clover-code as root (container CI) is the one
  case where commands write as host root: then bwrap itself runs as root and
  puts the command in a new user namespace where it is uid/gid ``INNER_ID``
  (``nobody``), mapped to root outside, with no capability in any namespace,
  no way to make another user namespace (``--disable-userns``), /proc
  read-only (so root's ownership of sysctl files writes nothing), and the
  host's root-only secrets (shadow, sudoers, ssh host keys, container
  engines' state) hidden besides the usual homes, and a seccomp filter
  (``seccomp.py``) that refuses setuid/setgid modes, so no setuid-root file
  can be left in the workspace. Workspace files, owned by root, are the
  command's own; what it makes lands on the host owned by root.

With ``toolchain`` (the default) the user's own tools are visible too, as in
their shell: their home read-only minus credential places, ``PATH`` and the
project's virtualenv (``host_view.py``); HOME is then their real home.

Every command of one sandbox shares one network namespace (``bwrap_net.py``:
loopback only, unless ``network=True`` shares the host's), so a server one
command starts can be reached from the next.

A timeout or a cancellation kills bwrap's process group; bwrap's own init
then dies and the kernel kills everything else in the pid namespace. For the
same reason background processes end when the command's shell exits: nothing
outlives a command here (unlike Docker), except a background job
(``start_job``), which is a ``bwrap`` process of its own that runs until it
ends or is stopped (``local_job.py``). The working directory persists between
commands through an ``EXIT`` trap; the environment does not.

What is hidden is listed in ``bwrap_hide.py``; the identity flags, the setuid
filter and the check that bubblewrap works here are in ``bwrap_identity.py``.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shlex
import shutil
import signal
import tempfile
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from clover_code.errors import ToolError
from clover_code.proc.children import signal_group
from clover_code.tools.sandbox.base import ExecResult, JobFeed, SerialSandbox
from clover_code.tools.sandbox.bwrap_hide import HIDDEN, data_tops, root_hidden, under
from clover_code.tools.sandbox.bwrap_identity import identity_args, with_seccomp
from clover_code.tools.sandbox.bwrap_net import SharedNetwork
from clover_code.tools.sandbox.control_files import outside_paths, protected_paths
from clover_code.tools.sandbox.host_view import HostView, host_view
from clover_code.tools.sandbox.local_job import LocalJob
from clover_code.tools.sandbox.output import OutputSink, PipeReader
from clover_code.tools.sandbox.policy import (
    DEFAULT_PASSTHROUGH,
    SandboxLimits,
    runs_as_root,
    sandbox_env,
    sandbox_user,
)
from clover_code.tools.sandbox.process import PipedProcess, start_piped

__all__ = ["BwrapSandbox"]


class BwrapSandbox(SerialSandbox):
    """Runs each command in a fresh bubblewrap sandbox over the host's filesystem."""

    kind = "bwrap"

    def __init__(
        self,
        root: str | os.PathLike[str],
        *,
        network: bool = False,
        limits: SandboxLimits | None = None,
        passthrough: Iterable[str] = DEFAULT_PASSTHROUGH,
        output_limit: int = 30_000,
        stream_limit: int = 1_000_000,
        drain_timeout: float = 0.5,
        bwrap: str = "bwrap",
        toolchain: bool = True,
        protect: Iterable[str] = (),
    ) -> None:
        super().__init__(root, output_limit=output_limit, stream_limit=stream_limit)
        self.protect = tuple(protect)
        """Workspace scripts trusted settings name, mounted read-only with the control files."""
        if self.root == Path("/"):
            raise ToolError("the sandbox cannot use / as the workspace; open a project directory.")
        self.network = network
        self.contained = not network
        self.limits = limits or SandboxLimits()
        self.drain_timeout = drain_timeout
        self.env = sandbox_env(passthrough)
        if not os.path.isdir("/home") or os.path.islink("/home"):
            self.env["HOME"] = "/tmp/home"  # no /home to hide and reuse: keep HOME in /tmp
        self._private_home = self.env["HOME"]
        self._base_env = dict(self.env)
        self.toolchain = toolchain
        """Show the user's toolchain (``host_view.py``): home minus credentials, PATH, venv."""
        self._bwrap = shutil.which(bwrap) or bwrap
        self._user = sandbox_user(self.root)
        self._net = SharedNetwork(self._bwrap, identity_args(self._user), self._user)
        """The network namespace every command joins (none with ``network``: the host's)."""
        self._jobs: list[LocalJob] = []
        self._spawned: set[PipedProcess] = set()
        """Programs ``spawn`` started that may still run (``close`` stops them)."""

    def _argv(self, script: str, cwd_file: Path | None) -> list[str]:
        """The bwrap command line that runs ``script`` with ``bash -c`` (``cwd_file``:
        where its ``EXIT`` trap writes the final directory, bound in)."""
        as_root = runs_as_root(self._user) and os.getuid() == 0
        args = [self._bwrap, *identity_args(self._user), "--hostname", "sandbox"]
        if self.network or self._net.ready:
            args.append("--share-net")  # the host's network, or the one nsenter joined
        args += ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp"]
        hidden = [h for h in HIDDEN if os.path.isdir(h) and not os.path.islink(h)]
        hidden += data_tops()
        home = os.path.realpath(os.path.expanduser("~"))
        if home != "/" and os.path.isdir(home) and not any(under(home, h) for h in hidden):
            hidden.append(home)
        secret_files: list[str] = []
        concealed = [*hidden, "/tmp"]  # where the user's tools may need binding back in
        if as_root:
            secret_dirs, secret_files = root_hidden()
            hidden += [d for d in secret_dirs if not any(under(d, h) for h in hidden)]
        for path in hidden:
            args += ["--tmpfs", path]
        for path in secret_files:
            args += ["--ro-bind", "/dev/null", path]
        # HOME's mount point is made inside the /home tmpfs, before it turns read-only.
        args += ["--tmpfs", self._private_home]
        view = self._view(concealed)
        args += view.binds
        args += ["--bind", str(self.root), str(self.root)]
        # .git and the control files, read-only: a mount point cannot be renamed,
        # removed or replaced.
        for protected in protected_paths(self.root, self.protect):
            args += ["--ro-bind", str(protected), str(protected)]
        for linked in outside_paths(self.root):  # a linked worktree's git directories
            args += ["--ro-bind", str(linked), str(linked)]
        args += view.hides
        if cwd_file is not None:
            args += ["--bind", str(cwd_file), str(cwd_file)]
        for path in hidden:
            args += ["--remount-ro", path]
        args += view.remounts
        if as_root:
            args += ["--remount-ro", "/proc"]
        args += ["--chdir", str(self.cwd), "--", "/bin/bash", "-c", script]
        return args

    def _view(self, concealed: list[str]) -> HostView:
        """The user's toolchain as this command sees it; sets the command's environment."""
        if self.toolchain:
            view = host_view(self.root, self._user, concealed=tuple(concealed))
        else:
            view = HostView()
        self.env = {**self._base_env, **view.env}
        return view

    def _script(self, command: str, cwd_file: Path | None) -> str:
        lim = self.limits
        script = f"ulimit -u {lim.pids} -d {lim.memory_mb * 1024} 2>/dev/null\n"
        if cwd_file is not None:
            script += f"trap 'pwd -P >| {shlex.quote(str(cwd_file))} 2>/dev/null' EXIT\n"
        return script + command

    async def _join_network(self) -> list[str]:
        """Make the shared network namespace before the first command; a note when it
        cannot be made (each command then has a network of its own, as before)."""
        if self.network or self._net.ready or self._net.problem is not None:
            return []
        await asyncio.to_thread(self._net.open)
        if self._net.problem is None:
            return []
        return [
            f"[{self._net.problem}: each command gets a network of its own, so a server "
            "a background job starts cannot be reached from other commands]"
        ]

    async def _exec(
        self, command: str, timeout: float, on_output: Callable[[str], None] | None
    ) -> ExecResult:
        notes = await self._join_network()
        notes += self._cwd_notes()
        fd, name = tempfile.mkstemp(prefix="clover-cwd-")
        os.close(fd)
        cwd_file = Path(name)
        if os.getuid() == 0:
            os.chown(cwd_file, *self._user)
        sink = OutputSink(self.output_limit, self.stream_limit, on_output)
        try:
            argv = self._argv(self._script(command, cwd_file), cwd_file)
            code, timed_out = await self._run(argv, sink, timeout)
            notes.extend(self._adopt_cwd_file(cwd_file))
        finally:
            cwd_file.unlink(missing_ok=True)
        return sink.result(None if timed_out else code, timed_out=timed_out, notes=notes)

    async def _start_job(self, command: str, feed: JobFeed) -> LocalJob:
        """A ``bwrap`` process of its own for ``command``, in the shared network."""
        for note in await self._join_network():
            feed((note + "\n").encode())
        argv = self._argv(self._script(command, None), None)
        read_fd, write_fd = os.pipe()
        try:
            proc = await self._spawn(argv, write_fd)
        except BaseException:
            os.close(read_fd)
            raise
        finally:
            os.close(write_fd)
        job = LocalJob(proc, read_fd, feed, drain_timeout=self.drain_timeout)
        self._jobs = [j for j in self._jobs if j.running] + [job]
        return job

    async def _spawn(self, argv: list[str], output_fd: int) -> asyncio.subprocess.Process:
        """Start ``argv`` (a bwrap command line) in its own session, in the shared
        network, with its output into ``output_fd``."""
        extra: dict[str, Any] = {}
        if os.getuid() == 0 and not runs_as_root(self._user):
            extra = {"user": self._user[0], "group": self._user[1], "extra_groups": []}
        argv, own_fds = with_seccomp(argv, self._user)
        argv, fds = self._net.wrap(argv, own_fds)
        try:
            return await asyncio.create_subprocess_exec(
                *argv,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=output_fd,
                stderr=output_fd,
                env=self.env,
                start_new_session=True,
                pass_fds=fds,
                **extra,
            )
        except OSError as exc:
            msg = f"bubblewrap could not start ({exc.strerror or exc}); check that bwrap works."
            raise ToolError(msg) from None
        finally:
            for fd in own_fds:
                os.close(fd)

    async def _run(self, argv: list[str], sink: OutputSink, timeout: float) -> tuple[int, bool]:
        """Start bwrap, pump its output, enforce the timeout; returns (exit code, timed out)."""
        loop = asyncio.get_running_loop()
        read_fd, write_fd = os.pipe()
        try:
            proc = await self._spawn(argv, write_fd)
        except BaseException:
            os.close(read_fd)
            raise
        finally:
            os.close(write_fd)
        pipe = os.fdopen(read_fd, "rb", buffering=0)
        transport, reader = await loop.connect_read_pipe(lambda: PipeReader(sink.feed), pipe)
        timed_out = False
        try:
            try:
                await asyncio.wait_for(proc.wait(), timeout)
            except TimeoutError:
                timed_out = True
                signal_group(proc.pid, signal.SIGKILL)
                await proc.wait()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(reader.closed.wait(), self.drain_timeout)
        except asyncio.CancelledError:
            signal_group(proc.pid, signal.SIGKILL)
            with contextlib.suppress(TimeoutError, asyncio.CancelledError):
                await asyncio.wait_for(proc.wait(), 1.0)
            raise
        finally:
            transport.close()
        code = proc.returncode if proc.returncode is not None else -signal.SIGKILL
        return (code if code >= 0 else 128 - code), timed_out

    async def spawn(self, argv: Sequence[str], *, cwd: Path | None = None) -> PipedProcess:
        """Start ``argv`` under bubblewrap as a command would run, but without network
        whatever ``network`` says, and with its stdin and stdout as pipes; it lives
        until killed (``--die-with-parent``: at the latest with clover-code)."""
        fd, name = tempfile.mkstemp(prefix="clover-cwd-")
        os.close(fd)
        cwd_file = Path(name)
        if os.getuid() == 0:
            os.chown(cwd_file, *self._user)
        command = self._argv(self._script(f"exec {shlex.join(argv)}", cwd_file), cwd_file)
        # A language server needs no network: it stays in the sandbox's own namespace.
        command = [word for word in command if word != "--share-net"]
        command[command.index("--chdir") + 1] = str(cwd or self.root)
        extra: dict[str, Any] = {}
        if os.getuid() == 0 and not runs_as_root(self._user):
            extra = {"user": self._user[0], "group": self._user[1], "extra_groups": []}
        command, fds = with_seccomp(command, self._user)
        try:
            proc = await start_piped(
                command,
                cwd=None,
                env=self.env,
                what="bubblewrap",
                on_end=lambda: cwd_file.unlink(missing_ok=True),
                pass_fds=fds,
                **extra,
            )
        finally:
            for fd in fds:
                os.close(fd)
        self._spawned.add(proc)
        return proc

    async def close(self) -> None:
        """Stop the background jobs and the programs ``spawn`` started, and let go of
        the shared network; no process outlives a command."""
        jobs, self._jobs = self._jobs, []
        for job in jobs:
            job.kill_now()
        await asyncio.gather(*(job.wait() for job in jobs), return_exceptions=True)
        spawned, self._spawned = list(self._spawned), set()
        await asyncio.gather(*(proc.kill() for proc in spawned))
        self._net.close()
