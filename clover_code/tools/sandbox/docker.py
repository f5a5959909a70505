"""``DockerSandbox``: shell commands in one long-lived, locked-down container.

One container per session, labelled with its owner (host, pid, start time)
and removed on close; containers whose owner died are removed when the next
session starts. Inside it:

- the workspace is bind-mounted read-write at the same path as on the host
  (``.git`` and the control files read-only, see ``control_files``; when a
  ``.git`` appears or is replaced, the next command gets a fresh container
  that mounts it so); nothing else of the host is;
- commands run as the host user's uid:gid (the workspace owner's when
  clover-code runs as root), with every capability dropped,
  ``no-new-privileges``, a read-only root filesystem, tmpfs /tmp and HOME,
  and pids, memory and CPU limits. That uid is 0 only when clover-code runs
  as root on a root-owned workspace (container CI), because only root can
  write there and Docker cannot map ids per container: then commands are uid
  0 with an empty capability set (bounding set included, so nothing they run
  gets one back), which the kernel treats as an unprivileged process except
  that files owned by uid 0 are theirs. So that none can leave a
  setuid-root program in the workspace, the runner then installs the setuid
  filter (``seccomp.py``, on top of Docker's default profile) before it
  runs any command, or refuses to run any (``docker_setup.root_filter``);
- no network unless asked for (``network=True``); no Docker socket, no SSH
  agent; the environment is ``policy.sandbox_env`` (no host variables but an
  allowlist, never one named like a credential).

Commands go to ``runner.py``, the container's main process, over the attach
stream: each is ``bash -c`` in its own process group, with its timeout
enforced in the container. If the runner does not report within a grace
period, the command's processes are killed through a second ``docker exec``
and the container is replaced, so a call returns within ``timeout`` + 2 s.
The working directory persists between commands; the environment does not.
A background job (``start_job``, ``docker_job.py``) is a runner command with
no timeout, in the same container and network as every later command.
If Docker goes away the command fails with a ``ToolError``; nothing ever
falls back to running on the host.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import os
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from clover_code.errors import ToolError
from clover_code.tools.sandbox.base import ExecResult, JobFeed, SerialSandbox
from clover_code.tools.sandbox.control_files import outside_paths, protected_paths
from clover_code.tools.sandbox.docker_exec import exec_program, kill_command, remove_soon
from clover_code.tools.sandbox.docker_job import DockerJob
from clover_code.tools.sandbox.docker_link import (
    RunnerGone,
    RunnerLink,
    RunnerRefused,
    open_attach_stream,
)
from clover_code.tools.sandbox.docker_process import ExecProcess
from clover_code.tools.sandbox.docker_setup import (
    DOCKER_DOWN,
    clean_stale_containers,
    container_spec,
    docker_client,
    remove_container,
    root_filter,
    short_error,
)
from clover_code.tools.sandbox.output import OutputSink
from clover_code.tools.sandbox.policy import (
    DEFAULT_PASSTHROUGH,
    SandboxLimits,
    sandbox_env,
    sandbox_user,
)
from clover_code.tools.sandbox.project_image import image_env

__all__ = ["DockerSandbox"]

_GRACE = 0.8
"""Seconds past the timeout to wait for the runner's own report before killing from outside."""


class DockerSandbox(SerialSandbox):
    """Runs commands in a Docker container that lives as long as this object."""

    kind = "docker"

    def __init__(
        self,
        root: str | os.PathLike[str],
        *,
        image: str,
        network: bool = False,
        limits: SandboxLimits | None = None,
        passthrough: Iterable[str] = DEFAULT_PASSTHROUGH,
        output_limit: int = 30_000,
        stream_limit: int = 1_000_000,
        client: Any = None,
        start_timeout: float = 30.0,
        protect: Iterable[str] = (),
    ) -> None:
        super().__init__(root, output_limit=output_limit, stream_limit=stream_limit)
        self.protect = tuple(protect)
        """Workspace scripts trusted settings name, mounted read-only with the control files."""
        if self.root == Path("/"):
            msg = "the sandbox cannot mount / as the workspace; open a project directory instead."
            raise ToolError(msg)
        self.user = sandbox_user(self.root)
        """The uid and gid commands run as; 0 only for root on a root-owned workspace,
        and then without any capability."""
        root_filter(self.user)  # as root, fail now where no filter can stop setuid files
        self.image = image
        self.network = network
        self.contained = not network
        self.limits = limits or SandboxLimits()
        self.start_timeout = start_timeout
        self.env = sandbox_env(passthrough)
        self.container_id: str | None = None
        self._client = client
        self._link: RunnerLink | None = None
        self._ids = itertools.count(1)
        self._restarted = False
        self._cleaned = False
        self._protected: tuple[tuple[str, int], ...] = ()
        """The read-only mounts of the running container (``_protection`` at its start)."""

    # -- lifecycle ---------------------------------------------------------

    async def start(self) -> None:
        """Start the container now (``exec`` does it on first use)."""
        async with self._lock:
            await self._ensure()

    async def _ensure(self) -> RunnerLink:
        if self._link is not None and not self._link.closed:
            return self._link
        if self._link is not None:
            self._restarted = True
            await asyncio.to_thread(self._discard)
        self._link = await asyncio.to_thread(self._launch)
        return self._link

    def _launch(self) -> RunnerLink:
        """Create, attach to and start the container; wait for its runner (blocking).

        Any failure to reach Docker becomes one ``ToolError``; a half-made
        container is removed.
        """
        import docker.errors
        import requests

        if self._client is None:
            self._client = docker_client()
        try:
            return self._launch_with(self._client)
        except docker.errors.ImageNotFound:
            self._discard()
            msg = (
                f"the sandbox image {self.image} is missing; "
                "build it with `clover-code sandbox build`."
            )
            raise ToolError(msg) from None
        except RunnerRefused as exc:
            self._discard()
            raise ToolError(str(exc)) from None
        except RunnerGone as exc:
            self._discard()
            msg = (
                f"the sandbox container did not start ({exc}); rebuild the image with "
                "`clover-code sandbox build --force` and check `docker info`."
            )
            raise ToolError(msg) from None
        except (docker.errors.DockerException, requests.RequestException) as exc:
            self._discard()
            raise ToolError(DOCKER_DOWN.format(detail=short_error(exc))) from None

    def _protection(self) -> tuple[tuple[str, int], ...]:
        """What the container must mount read-only now: each path, with its inode."""
        key = []
        for path in protected_paths(self.root, self.protect) + outside_paths(self.root):
            with contextlib.suppress(OSError):
                key.append((str(path), os.stat(path).st_ino))
        return tuple(key)

    def _launch_with(self, client: Any) -> RunnerLink:
        client.ping()
        self._protected = self._protection()
        if not self._cleaned:
            self._cleaned = True
            clean_stale_containers(client)
        client.images.get(self.image)
        self.env.update(image_env(client, self.image))  # the image's PATH and tool variables
        spec = container_spec(
            client.api,
            image=self.image,
            root=self.root,
            user=self.user,
            network=self.network,
            limits=self.limits,
            path=self.env["PATH"],
            protect=self.protect,
        )
        spec["entrypoint"] = ""  # a project image's ENTRYPOINT must not wrap the runner
        self.container_id = client.api.create_container(**spec)["Id"]
        link = RunnerLink(*open_attach_stream(client.api, self.container_id))
        self._link = link
        client.api.start(self.container_id)
        link.wait_ready(self.start_timeout)
        return link

    def _discard(self) -> None:
        """Drop the link and remove the container (blocking; errors ignored)."""
        if self._link is not None:
            self._link.close()
            self._link = None
        if self._client is not None and self.container_id is not None:
            remove_container(self._client, self.container_id)
        self.container_id = None

    async def close(self) -> None:
        """Stop the runner and remove the container."""
        async with self._lock:
            await asyncio.to_thread(self._discard)
            self._link = None

    # -- long-lived programs ------------------------------------------------

    async def spawn(self, argv: Sequence[str], *, cwd: Path | None = None) -> ExecProcess:
        """Start ``argv`` in the container with ``docker exec`` (``docker_exec``), as
        commands run: same user, environment, filter and mounts. It ends with the
        container (when ``.git`` changes or the sandbox closes)."""
        if self._link is None or self._link.closed:
            async with self._lock:
                await self._ensure()
        return await exec_program(
            self._client,
            self.container_id,
            argv,
            user=self.user,
            env=self.env,
            workdir=str(cwd or self.root),
        )

    # -- commands ----------------------------------------------------------

    async def _ready_link(self) -> tuple[RunnerLink, list[str]]:
        """The runner to send the next command to, and notes when its container was
        (re)started under the session's feet."""
        notes: list[str] = []
        if self._link is not None and self._protected != self._protection():
            # .git appeared or was replaced since the container started (`git init` in
            # it, say): a fresh container mounts the new one read-only too.
            await asyncio.to_thread(self._discard)
            notes.append(
                "[.git changed since the sandbox started, so the container was started again "
                "to keep .git read-only: background processes, background jobs and files "
                "outside the workspace are gone]"
            )
        link = await self._ensure()
        if self._restarted:
            self._restarted = False
            notes.append(
                "[the sandbox container had stopped and was started again: "
                "background processes, background jobs and files outside the workspace are gone]"
            )
        return link, notes

    async def _start_job(self, command: str, feed: JobFeed) -> DockerJob:
        """The runner runs ``command`` with no timeout; its output goes to ``feed``."""
        link, notes = await self._ready_link()
        for note in notes:
            feed((note + "\n").encode())
        loop = asyncio.get_running_loop()

        def fed(data: bytes) -> None:  # called in the link's reader thread
            loop.call_soon_threadsafe(feed, data)

        cid = next(self._ids)
        token = os.urandom(8).hex()
        done: asyncio.Future[dict[str, Any]] = loop.create_future()
        request = {"op": "run", "id": cid, "token": token, "cmd": command}
        request |= {"cwd": str(self.cwd), "env": self.env, "timeout": None}
        try:
            link.register(cid, fed, done)
            link.send(request)
        except RunnerGone as exc:
            link.unregister(cid)
            msg = (
                f"the Docker sandbox stopped before the job could start ({exc}); check that "
                "Docker is running (`docker info`) and start it again."
            )
            raise ToolError(msg) from None
        return DockerJob(link, cid, done, lambda: self._kill_from_outside(token, replace=False))

    async def _exec(
        self, command: str, timeout: float, on_output: Callable[[str], None] | None
    ) -> ExecResult:
        link, notes = await self._ready_link()
        notes.extend(self._cwd_notes())
        loop = asyncio.get_running_loop()
        live = None
        if on_output is not None:
            callback = on_output

            def live(text: str) -> None:
                loop.call_soon_threadsafe(callback, text)

        sink = OutputSink(self.output_limit, self.stream_limit, live)
        cid = next(self._ids)
        token = os.urandom(8).hex()
        done: asyncio.Future[dict[str, Any]] = loop.create_future()
        request = {"op": "run", "id": cid, "token": token, "cmd": command}
        request |= {"cwd": str(self.cwd), "env": self.env, "timeout": timeout}
        try:
            link.register(cid, sink.feed, done)
            link.send(request)
            info: dict[str, Any] | None = await asyncio.wait_for(
                asyncio.shield(done), timeout + _GRACE
            )
        except TimeoutError:
            info = None
            await self._kill_from_outside(token)
        except asyncio.CancelledError:
            with contextlib.suppress(Exception):
                link.send({"op": "kill", "id": cid})
                await asyncio.wait_for(asyncio.shield(done), 1.0)
            raise
        except RunnerGone as exc:
            msg = (
                f"the Docker sandbox stopped during the command ({exc}); nothing ran on this "
                "machine. Check that Docker is running (`docker info`) and run the command again."
            )
            raise ToolError(msg) from None
        finally:
            link.unregister(cid)
        if info is None:
            notes.append("[the sandbox did not answer after the timeout; it was restarted]")
            timed_out, exit_code = True, None
        else:
            timed_out = bool(info.get("timed_out"))
            killed = timed_out or bool(info.get("killed"))
            exit_code = None if killed else int(info["code"])
            notes.extend(self._adopt_cwd(str(info.get("cwd") or "")))
            if info.get("held"):
                notes.append(
                    f"[stopped {info['held']} background process(es) that kept the output open; "
                    "redirect a background job's output to keep it running: cmd > log 2>&1 &]"
                )
        return sink.result(exit_code, timed_out=timed_out, notes=notes)

    async def _kill_from_outside(self, token: str, *, replace: bool = True) -> None:
        """Kill the command's processes through a second exec (the runner's ``--kill``),
        then (``replace``) replace the container."""
        client, container_id = self._client, self.container_id
        await kill_command(client, container_id, token)
        if not replace:
            return
        # Whatever still runs goes with the container; the next command starts a fresh one.
        if self._link is not None:
            self._link.close()
        if client is not None and container_id is not None:
            remove_soon(client, container_id)
