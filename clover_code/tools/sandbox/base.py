"""The ``Sandbox`` interface the shell tool runs commands through."""

from __future__ import annotations

import asyncio
import os
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from clover_code.errors import ToolError

QUIET_ENV = {"PAGER": "cat", "GIT_PAGER": "cat", "GIT_TERMINAL_PROMPT": "0"}
"""Keep tools from waiting for a pager or a password prompt that nobody sees (for
commands that run with the user's own environment)."""


@dataclass(slots=True)
class ExecResult:
    """The outcome of one command.

    ``output`` is stdout and stderr interleaved, capped head + tail with a
    truncation marker; ``exit_code`` is None when the command was killed.
    """

    exit_code: int | None
    output: str
    truncated: bool = False
    timed_out: bool = False
    cancelled: bool = False
    duration: float = 0.0


@dataclass(frozen=True, slots=True)
class JobEnd:
    """How a background command ended: its exit code (None when it was killed), or
    ``lost`` saying why the sandbox lost it (its container went away)."""

    exit_code: int | None
    lost: str | None = None


class JobHandle(Protocol):
    """A command a sandbox started in the background (``Sandbox.start_job``)."""

    async def wait(self) -> JobEnd:
        """Return once the command has ended (its output has all been fed by then)."""
        ...

    async def stop(self) -> None:
        """Stop the command's whole process group; returns once it is gone, or once the
        sandbox has given up waiting for that."""
        ...

    async def refresh(self) -> None:
        """Bring the output fed so far up to date (a sandbox that reads it as it comes
        has nothing to do)."""
        ...


JobFeed = Callable[[bytes], None]
"""Where a background command's output goes as it arrives (stdout and stderr merged);
always called on the event loop's thread."""


class Sandbox(Protocol):
    """Runs shell commands. The working directory persists between commands;
    the environment does not."""

    kind: str
    """"host", "docker" or "bwrap": shown to the user."""

    contained: bool
    """Whether a command can neither reach the network nor write outside the
    workspace (Docker or bubblewrap without network): ``sandbox-auto`` runs such
    commands without asking."""

    async def exec(
        self,
        command: str,
        *,
        timeout: float,
        on_output: Callable[[str], None] | None = None,
    ) -> ExecResult:
        """Run ``command`` with ``bash -c`` in the current directory."""
        ...

    async def start_job(self, command: str, feed: JobFeed) -> JobHandle:
        """Start ``command`` with ``bash -c`` in the current directory, in the background,
        and return at once. It runs in its own process group, shares the network of later
        commands (a server it starts is reachable from them), has no timeout and does not
        change the working directory; ``close`` stops it."""
        ...

    async def spawn(self, argv: Sequence[str], *, cwd: Path | None = None) -> SandboxProcess:
        """Start ``argv`` as a long-lived program (a language server) with pipes to its
        stdin and stdout, in ``cwd`` (default: the workspace root). It runs under the
        same confinement, environment and read-only files as commands, without
        network, and is stopped with the sandbox. ``ToolError`` where the sandbox
        cannot keep such a program (the editor's terminal)."""
        ...

    async def close(self) -> None:
        """Stop whatever the sandbox started."""
        ...


class SandboxProcess(Protocol):
    """A program ``Sandbox.spawn`` started: bytes in on its stdin, out on its stdout.

    Its stderr is kept, the last few kilobytes, for saying why it ended.
    """

    stdout: asyncio.StreamReader
    """Its standard output; at EOF once the program ended."""

    @property
    def returncode(self) -> int | None:
        """Its exit status once it ended (None while it runs, or when it is unknown)."""
        ...

    def stderr_tail(self) -> str:
        """The end of what it wrote to stderr so far."""
        ...

    async def write(self, data: bytes) -> None:
        """Write to its stdin; ``OSError`` once it is gone."""
        ...

    async def wait(self) -> int | None:
        """Wait until it ends; its exit status (None when unknown)."""
        ...

    async def kill(self) -> None:
        """Stop it and whatever it started, at once."""
        ...


def workspace_dir(root: Path, reported: str) -> Path | None:
    """The directory a command reported ending in (its ``pwd -P``), when that is ``root``
    or a directory below it; otherwise None."""
    new = Path(os.path.realpath(reported))
    if (new == root or new.is_relative_to(root)) and new.is_dir():
        return new
    return None


class SerialSandbox(ABC):
    """What every sandbox shares: one command at a time, a working directory that
    persists between commands (and falls back to the root if it vanishes), and the
    bounds on each command's output.

    Subclasses implement ``_exec``."""

    def __init__(
        self, root: str | os.PathLike[str], *, output_limit: int, stream_limit: int
    ) -> None:
        self.root = Path(os.path.realpath(root))
        self.cwd = self.root
        """Where the next command starts; always the root or a directory below it."""
        self.output_limit = output_limit
        """Characters of output kept per command (head + tail)."""
        self.stream_limit = stream_limit
        """Characters of output streamed live per command."""
        self._lock = asyncio.Lock()

    async def exec(
        self,
        command: str,
        *,
        timeout: float,
        on_output: Callable[[str], None] | None = None,
    ) -> ExecResult:
        """Run ``command`` with ``bash -c`` in the current directory; one at a time."""
        if "\0" in command:
            raise ToolError("the command contains a NUL character; remove it and try again.")
        async with self._lock:
            return await self._exec(command, timeout, on_output)

    async def start_job(self, command: str, feed: JobFeed) -> JobHandle:
        """Start ``command`` in the background in the current directory (see ``Sandbox``)."""
        if "\0" in command:
            raise ToolError("the command contains a NUL character; remove it and try again.")
        async with self._lock:
            self._cwd_notes()  # a vanished directory: the job starts in the root
            return await self._start_job(command, feed)

    def _cwd_notes(self) -> list[str]:
        """Notes for the output when the working directory is gone (it resets to the root)."""
        if self.cwd.is_dir():
            return []
        gone, self.cwd = self.cwd, self.root
        return [f"[the directory {gone} is gone; commands now start in {self.root}]"]

    def _adopt_cwd(self, reported: str) -> list[str]:
        """Adopt the directory a command ended in (``pwd -P`` output), if it is inside
        the workspace; otherwise reset to the root and say so."""
        if not reported:
            return []  # the shell was replaced (exec) or killed before it could report
        new = workspace_dir(self.root, reported)
        if new is not None:
            self.cwd = new
            return []
        self.cwd = self.root
        return [
            f"[the command ended in {reported}, outside the workspace; "
            f"the next command starts in {self.root}]"
        ]

    def _adopt_cwd_file(self, cwd_file: str | Path) -> list[str]:
        """``_adopt_cwd`` with the directory read from the file the command's trap wrote."""
        try:
            reported = Path(cwd_file).read_text(encoding="utf-8", errors="replace").strip()
        except OSError:
            return []
        return self._adopt_cwd(reported)

    @abstractmethod
    async def _exec(
        self, command: str, timeout: float, on_output: Callable[[str], None] | None
    ) -> ExecResult:
        """Run one command; the lock is held."""

    @abstractmethod
    async def _start_job(self, command: str, feed: JobFeed) -> JobHandle:
        """Start one background command; the lock is held."""
