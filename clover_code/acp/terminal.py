"""``EditorTerminal``: a ``Sandbox`` that runs commands in the editor's terminal.

Used only when the user asks for it (``clover-code acp --terminal``) and the
client offers ``terminal/*``. The editor runs ``bash -c`` on its own machine
and shows the output live in the tool call; nothing isolates the command,
exactly as with ``--sandbox none``. Each command is one terminal:
``terminal/create``, ``terminal/wait_for_exit`` (``terminal/kill`` on
timeout or cancellation), ``terminal/output``, ``terminal/release``.

Like the other sandboxes the working directory persists between commands:
an ``EXIT`` trap writes the final directory to a private file (when the
editor runs on another machine the file never appears, and commands keep
starting in the workspace root).

A background job is a terminal too, left running (``terminal_job.py``): the
editor shows it under the call that started it until it ends or is stopped.
The editor runs it on its machine, so a server it starts is reachable from
later commands there.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shlex
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from acp import Client, RequestError
from acp.schema import EnvVariable

from clover_code.acp.client import Outbox, describe_error
from clover_code.acp.terminal_job import TerminalJob
from clover_code.errors import ToolError
from clover_code.tools.sandbox.base import (
    QUIET_ENV,
    ExecResult,
    JobFeed,
    SandboxProcess,
    workspace_dir,
)

__all__ = ["EditorTerminal"]


class EditorTerminal:
    """Runs each shell command in a terminal the editor creates and shows."""

    kind = "editor-terminal"
    contained = False

    def __init__(
        self,
        client: Client,
        outbox: Outbox,
        root: Path,
        *,
        output_limit: int = 30_000,
        on_terminal: Callable[[str], None] | None = None,
    ) -> None:
        self._client = client
        self._outbox = outbox
        self.root = Path(os.path.realpath(root))
        self.cwd = self.root
        """Where the next command starts; always the root or a directory below it."""
        # The model sees head + tail of ``output_limit`` characters; ask for
        # enough bytes that the tail survives the editor's own truncation.
        self._byte_limit = output_limit * 4
        self._on_terminal = on_terminal
        self._lock = asyncio.Lock()
        self._jobs: list[TerminalJob] = []

    async def exec(
        self,
        command: str,
        *,
        timeout: float,
        on_output: Callable[[str], None] | None = None,
    ) -> ExecResult:
        """Run ``command`` in a new editor terminal; one command at a time."""
        async with self._lock:
            try:
                return await self._exec(command, timeout)
            except (ConnectionError, OSError, RequestError) as exc:
                raise ToolError(
                    f"the editor's terminal could not run the command: {describe_error(exc)}"
                ) from None

    async def _exec(self, command: str, timeout: float) -> ExecResult:
        if not self.cwd.is_dir():
            self.cwd = self.root
        fd, cwd_file = tempfile.mkstemp(prefix="clover-cwd-")
        os.close(fd)
        script = f"trap 'pwd -P > {shlex.quote(cwd_file)} 2>/dev/null' EXIT\n{command}"
        session_id = self._outbox.session_id
        started = time.monotonic()
        try:
            await self._outbox.drain()
            created = await self._client.create_terminal(
                session_id=session_id,
                command="bash",
                args=["-c", script],
                env=[EnvVariable(name=k, value=v) for k, v in QUIET_ENV.items()],
                cwd=str(self.cwd),
                output_byte_limit=self._byte_limit,
            )
            terminal = created.terminal_id
            try:
                if self._on_terminal is not None:
                    self._on_terminal(terminal)
                return await self._finish(session_id, terminal, timeout, started)
            finally:
                with contextlib.suppress(ConnectionError, OSError, RequestError):
                    await asyncio.shield(
                        self._client.release_terminal(session_id=session_id, terminal_id=terminal)
                    )
        finally:
            self._adopt_cwd(cwd_file)

    async def _finish(
        self, session_id: str, terminal: str, timeout: float, started: float
    ) -> ExecResult:
        timed_out = False
        exit_code: int | None = None
        try:
            status = await asyncio.wait_for(
                self._client.wait_for_terminal_exit(session_id=session_id, terminal_id=terminal),
                timeout,
            )
            exit_code = status.exit_code
        except TimeoutError:
            timed_out = True
            await self._client.kill_terminal(session_id=session_id, terminal_id=terminal)
        except asyncio.CancelledError:
            with contextlib.suppress(ConnectionError, OSError, RequestError):
                await asyncio.shield(
                    self._client.kill_terminal(session_id=session_id, terminal_id=terminal)
                )
            raise
        output = await self._client.terminal_output(session_id=session_id, terminal_id=terminal)
        if exit_code is None and not timed_out and output.exit_status is not None:
            exit_code = output.exit_status.exit_code
        return ExecResult(
            exit_code=None if timed_out else exit_code,
            output=output.output,
            truncated=output.truncated,
            timed_out=timed_out,
            duration=time.monotonic() - started,
        )

    def _adopt_cwd(self, cwd_file: str) -> None:
        try:
            reported = Path(cwd_file).read_text(encoding="utf-8", errors="replace").strip()
        except OSError:
            reported = ""
        finally:
            with contextlib.suppress(OSError):
                os.unlink(cwd_file)
        if reported:
            self.cwd = workspace_dir(self.root, reported) or self.root

    async def start_job(self, command: str, feed: JobFeed) -> TerminalJob:
        """Run ``command`` in a new editor terminal, shown under the running call, and
        return without waiting for it."""
        if "\0" in command:
            raise ToolError("the command contains a NUL character; remove it and try again.")
        async with self._lock:
            if not self.cwd.is_dir():
                self.cwd = self.root
            session_id = self._outbox.session_id
            try:
                await self._outbox.drain()
                created = await self._client.create_terminal(
                    session_id=session_id,
                    command="bash",
                    args=["-c", command],
                    env=[EnvVariable(name=k, value=v) for k, v in QUIET_ENV.items()],
                    cwd=str(self.cwd),
                    output_byte_limit=self._byte_limit,
                )
            except (ConnectionError, OSError, RequestError) as exc:
                raise ToolError(
                    f"the editor's terminal could not start the job: {describe_error(exc)}"
                ) from None
            if self._on_terminal is not None:
                self._on_terminal(created.terminal_id)
            job = TerminalJob(self._client, session_id, created.terminal_id, feed)
            self._jobs = [j for j in self._jobs if j.running] + [job]
            return job

    async def spawn(self, argv: Sequence[str], *, cwd: Path | None = None) -> SandboxProcess:
        """Refused: a terminal runs one command at a time and keeps no pipes to it."""
        raise ToolError("the editor's terminal (--terminal) cannot keep a language server running")

    async def close(self) -> None:
        """Kill the background jobs' terminals still running (each terminal of a command
        is released when its command ends)."""
        jobs, self._jobs = self._jobs, []
        await asyncio.gather(*(job.stop() for job in jobs), return_exceptions=True)
