"""One network namespace for every bubblewrap command of a session.

Each bubblewrap command is its own ``bwrap`` process with its own namespaces;
left like that, a server a background job starts would be unreachable from
the next command, which would get a network of its own. So the sandbox makes
one network namespace when it first runs a command, and every command joins
it (``nsenter``) before ``bwrap`` makes the rest (``--share-net``):

- a short-lived ``bwrap`` with the command's own identity flags makes a user
  and a network namespace (loopback up, nothing else: no route out) and
  reports its process through ``--info-fd``; this module opens both
  namespaces' files, checks they are the ones reported, and lets it exit.
  The open files keep the namespaces alive for the session, with no process;
- commands then run as ``nsenter --net=/proc/self/fd/N [--user=...] -- bwrap
  ... --share-net``. A regular user joins the namespace's user namespace first
  (which they own, as they made it) to be allowed into its network, keeping
  their ids (``--preserve-credentials``); bwrap then makes its usual user
  namespace inside it. Root (writing a root-owned workspace) joins the
  network alone: its commands still get bwrap's own unprivileged user
  namespace, which does not own this network, so they cannot reconfigure it.

Closing the files (``close``) frees the namespace once the last command in it
has ended.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import shutil
import subprocess
import time
from typing import Any

from clover_code.tools.sandbox.policy import runs_as_root

__all__ = ["SharedNetwork"]

_START_TIMEOUT = 10.0
"""Seconds to wait for the namespace maker to report."""


class SharedNetwork:
    """The namespace every command of one bubblewrap sandbox joins (see the module)."""

    def __init__(self, bwrap: str, identity: list[str], user: tuple[int, int]) -> None:
        self._bwrap = bwrap
        self._identity = identity
        self._user = user
        self._fds: tuple[int, ...] = ()
        self._prefix: list[str] = []
        self.problem: str | None = None
        """Why the namespace could not be made (then each command has its own), once tried."""

    @property
    def ready(self) -> bool:
        """Whether the namespace is open."""
        return bool(self._fds)

    def open(self) -> None:
        """Make the namespace (blocking); on failure ``problem`` says why."""
        if self._fds or self.problem is not None:
            return
        nsenter = shutil.which("nsenter")
        if nsenter is None:
            self.problem = "nsenter (util-linux) is not installed"
            return
        try:
            self._fds, self._prefix = self._make(nsenter)
        except (OSError, ValueError, KeyError, subprocess.SubprocessError) as exc:
            self.problem = f"the shared network namespace could not be made ({exc})"

    def _as_root(self) -> bool:
        return runs_as_root(self._user) and os.getuid() == 0

    def _make(self, nsenter: str) -> tuple[tuple[int, ...], list[str]]:
        read_fd, write_fd = os.pipe()
        argv = [self._bwrap, *self._identity, "--ro-bind", "/", "/", "--proc", "/proc"]
        argv += ["--info-fd", str(write_fd), "--", "cat"]
        extra: dict[str, Any] = {}
        if os.getuid() == 0 and not runs_as_root(self._user):
            extra = {"user": self._user[0], "group": self._user[1], "extra_groups": []}
        try:
            maker = subprocess.Popen(
                argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                pass_fds=(write_fd,),
                start_new_session=True,
                **extra,
            )
        finally:
            os.close(write_fd)
        try:
            info = _read_info(read_fd)
            pid = int(info["child-pid"])
            names = ("net",) if self._as_root() else ("user", "net")
            fds = tuple(os.open(f"/proc/{pid}/ns/{name}", os.O_RDONLY) for name in names)
            if os.fstat(fds[-1]).st_ino != int(info["net-namespace"]):
                for fd in fds:
                    os.close(fd)
                raise ValueError("the namespace maker's process was not the one reported")
        except BaseException:
            maker.kill()
            raise
        finally:
            os.close(read_fd)
            _release(maker)
        prefix = [nsenter, f"--net=/proc/self/fd/{fds[-1]}"]
        if len(fds) == 2:
            prefix += [f"--user=/proc/self/fd/{fds[0]}", "--preserve-credentials"]
        return fds, [*prefix, "--"]

    def wrap(self, argv: list[str], fds: tuple[int, ...]) -> tuple[list[str], tuple[int, ...]]:
        """``argv`` (a bwrap command line) run inside the namespace, and the file
        descriptors to pass; unchanged when the namespace is not open."""
        if not self._fds:
            return argv, fds
        return [*self._prefix, *argv], (*fds, *self._fds)

    def close(self) -> None:
        """Let go of the namespace (it ends with the last command still in it)."""
        fds, self._fds = self._fds, ()
        for fd in fds:
            with contextlib.suppress(OSError):
                os.close(fd)


def _read_info(fd: int) -> dict[str, Any]:
    """The JSON object bwrap writes to its ``--info-fd``."""
    data = b""
    deadline = time.monotonic() + _START_TIMEOUT
    while (left := deadline - time.monotonic()) > 0:
        ready, _, _ = select.select([fd], [], [], left)
        if not ready:
            break
        chunk = os.read(fd, 4096)
        if not chunk:
            break
        data += chunk
        with contextlib.suppress(ValueError):
            found = json.loads(data)
            if isinstance(found, dict):
                return found
    raise ValueError("bubblewrap did not report its namespaces")


def _release(maker: subprocess.Popen[bytes]) -> None:
    """Let the namespace maker exit (its ``cat`` reads the end of stdin) and reap it."""
    with contextlib.suppress(OSError):
        if maker.stdin is not None:
            maker.stdin.close()
    try:
        maker.wait(_START_TIMEOUT)
    except subprocess.TimeoutExpired:
        maker.kill()
        maker.wait()
    if maker.stderr is not None:
        maker.stderr.close()
