"""What ``DockerSandbox`` runs in its container through ``docker exec``, beside the runner.

- ``exec_program``: a long-lived program (a language server) started with
  the runner's ``--exec`` (the setuid filter first when commands run as uid
  0), as commands run: same user, environment and mounts, with a marker in
  its environment that ``--kill`` finds it by (``docker_process.py``);
- ``kill_command``: the runner's ``--kill TOKEN``, for when the runner itself
  does not answer; ``remove_soon``: the container removed in a thread of its
  own, so that a stuck command does not hold the call up.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import threading
from collections.abc import Mapping, Sequence
from typing import Any

from clover_code.errors import ToolError
from clover_code.tools.sandbox.docker_process import ExecProcess, open_exec_stream
from clover_code.tools.sandbox.docker_setup import (
    FILTER_PATH,
    RUNNER_COMMAND,
    remove_container,
    root_filter,
    short_error,
)

__all__ = ["MARKER", "exec_program", "kill_command", "remove_soon"]

MARKER = "CLOVER_SANDBOX_CMD"
"""The environment variable ``runner.py`` finds a command's processes by (its ``MARKER``)."""


async def exec_program(
    client: Any,
    container_id: str | None,
    argv: Sequence[str],
    *,
    user: tuple[int, int],
    env: Mapping[str, str],
    workdir: str,
) -> ExecProcess:
    """Start ``argv`` in the container as ``user`` with ``env`` in ``workdir``; a
    ``ToolError`` when Docker refuses it."""
    token = os.urandom(8).hex()
    command = [*RUNNER_COMMAND, "--exec"]
    if root_filter(user) is not None:
        command.append(FILTER_PATH)
    command += ["--", *argv]
    environment = {**env, MARKER: token}

    api = client.api

    def start() -> tuple[str, tuple[Any, Any, Any]] | str:
        try:
            exec_id = api.exec_create(
                container_id,
                command,
                stdin=True,
                stdout=True,
                stderr=True,
                tty=False,
                user=f"{user[0]}:{user[1]}",
                environment=environment,
                workdir=workdir,
            )["Id"]
            return exec_id, open_exec_stream(api, exec_id)
        except Exception as exc:  # Docker's and the connection's errors alike
            return short_error(exc)

    def kill() -> None:
        kill_id = api.exec_create(container_id, [*RUNNER_COMMAND, "--kill", token])["Id"]
        api.exec_start(kill_id)

    started = await asyncio.to_thread(start)
    if isinstance(started, str):
        raise ToolError(f"{argv[0]} could not start in the Docker sandbox ({started}).")
    exec_id, stream = started
    return ExecProcess(api, exec_id, stream, kill)


async def kill_command(client: Any, container_id: str | None, token: str) -> None:
    """Kill the processes of the command ``token`` names through a second exec (the
    runner's ``--kill``); gives up silently after 0.8 s or on any error."""

    def kill() -> None:
        with contextlib.suppress(Exception):
            api = client.api
            argv = [*RUNNER_COMMAND, "--kill", token]
            exec_id = api.exec_create(container_id, argv)["Id"]
            api.exec_start(exec_id)

    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(asyncio.to_thread(kill), 0.8)


def remove_soon(client: Any, container_id: str) -> None:
    """Remove the container in a daemon thread (errors ignored, as ``remove_container``)."""
    threading.Thread(target=remove_container, args=(client, container_id), daemon=True).start()
