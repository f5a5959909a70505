"""``LanguageServers``: the session's language servers, started when first needed.

A server starts in the background the first time a file of its language is
read or changed, inside the session's sandbox (``Sandbox.spawn``), and
lives until the session closes. Which program runs is decided in the
sandbox: a small ``sh`` script tries the candidates in order and says
which one it started before handing over (``_LAUNCH``); on the host the
candidate is looked up on ``PATH`` and must pass ``host_check`` (the
session's check of host programs against what the user trusted) first.

After a change the file's new text is sent (opened, or changed, then
saved), and its diagnostics are awaited until a shared deadline
(``lsp_wait``). A server that is not ready by then gets the text once it
is, so that a later look finds its answer. A server that ends by itself is
started again once; if it ends again its language is off for the session.
Each "off" is said once, as a notice.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import shlex
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from clover_code.errors import ToolError
from clover_code.tools.lsp.report import FileCheck, Severity, from_lsp
from clover_code.tools.lsp.servers import ServerSpec
from clover_code.tools.sandbox.base import Sandbox, SandboxProcess

if TYPE_CHECKING:
    from clover_code.tools.lsp.client import LspClient

__all__ = ["HostCheck", "LanguageServers"]

log = logging.getLogger(__name__)

HostCheck = Callable[[Sequence[str]], "list[str] | str | None"]
"""On the host: a command line resolved and allowed (its argv), refused (why, a
phrase), or None when its program is not installed."""

START_TIMEOUT = 60.0
"""Seconds a server may take to start and answer ``initialize``."""
STOP_TIMEOUT = 2.0
"""Seconds a server gets to shut down politely when the session ends."""

_STARTED = "clover-lsp-started"
_MISSING = "clover-lsp-missing"

State = Literal["idle", "starting", "ready", "off"]


def _launch_script(candidates: Sequence[Sequence[str]]) -> str:
    """``sh`` code that execs the first candidate whose program exists, after a line
    saying which, or says none does."""
    lines = [
        f"if command -v {shlex.quote(argv[0])} >/dev/null 2>&1; then "
        f"echo '{_STARTED} {index}'; exec {shlex.join(argv)}; fi"
        for index, argv in enumerate(candidates)
    ]
    return "\n".join([*lines, f"echo '{_MISSING}'; exit 127"])


@dataclass(slots=True)
class _Server:
    spec: ServerSpec
    state: State = "idle"
    client: LspClient | None = None
    starting: asyncio.Task[None] | None = None
    program: str = ""
    crashes: int = 0
    backlog: dict[str, tuple[str, str]] = field(default_factory=dict)
    """Documents changed while it was starting: uri -> (language id, text)."""


class LanguageServers:
    """Starts, feeds and stops the language servers of one session."""

    def __init__(
        self,
        sandbox: Sandbox,
        root: Path,
        specs: Sequence[ServerSpec],
        *,
        severity: Severity = "error",
        wait: float = 2.0,
        host_check: HostCheck | None = None,
        off: str | None = None,
        notices: Sequence[str] = (),
    ) -> None:
        self.sandbox = sandbox
        self.root = root
        self.severity: Severity = severity
        self.wait = wait
        """Seconds an edit waits for diagnostics (``lsp_wait``)."""
        self._servers = [_Server(spec) for spec in specs]
        self._host_check = host_check
        self._off = off
        """Why no server may start at all (said once, when one would), or None."""
        self._notices: list[str] = list(notices)
        self._closing = False
        self._tasks: set[asyncio.Task[None]] = set()

    # -- what front ends and tools call --------------------------------------

    @property
    def usable(self) -> bool:
        """Whether any server may start at all (not, say, on the host of an untrusted
        project): only then is the diagnostics tool offered."""
        return self._off is None

    @property
    def running(self) -> bool:
        """Whether a server was started and has not been stopped."""
        return any(
            server.client is not None
            or (server.starting is not None and not server.starting.done())
            for server in self._servers
        )

    def handles(self, rel: str) -> bool:
        """Whether some server checks the file at ``rel``."""
        return self._server_for(rel) is not None

    def take_notices(self) -> list[str]:
        """What the user should hear about the servers since the last call (once each)."""
        notices, self._notices = self._notices, []
        return notices

    def warm(self, rel: str) -> None:
        """Start the server for ``rel``'s language in the background, if it is not running."""
        server = self._server_for(rel)
        if server is not None:
            self._start(server)

    async def check(
        self, files: Sequence[tuple[str, str | None]], wait: float | None = None
    ) -> list[FileCheck]:
        """Send each changed file's text (None: the file is gone) to its server and wait,
        until ``wait`` seconds (default ``lsp_wait``) have passed, for their diagnostics."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + (self.wait if wait is None else wait)
        jobs: list[Awaitable[FileCheck | None]] = []
        for rel, text in files:
            server = self._server_for(rel)
            if server is None:
                continue
            if text is None:
                jobs.append(self._forget(server, rel))
            else:
                jobs.append(self._check_one(server, rel, text, deadline))
        found = await asyncio.gather(*jobs)
        return [check for check in found if check is not None]

    async def close(self) -> None:
        """Shut every server down (politely, briefly; then killed)."""
        self._closing = True
        for task in list(self._tasks):
            task.cancel()
        stops = []
        for server in self._servers:
            if server.starting is not None and not server.starting.done():
                server.starting.cancel()
            if server.client is not None:
                stops.append(server.client.shutdown(STOP_TIMEOUT))
                server.client = None
            server.state = "off"
        await asyncio.gather(*stops, *self._tasks, return_exceptions=True)

    # -- one file ------------------------------------------------------------

    def _server_for(self, rel: str) -> _Server | None:
        for server in self._servers:
            if server.spec.matches(rel):
                return server if server.state != "off" else None
        return None

    async def _forget(self, server: _Server, rel: str) -> FileCheck | None:
        from clover_code.tools.lsp.client import LspError, file_uri

        server.backlog.pop(file_uri(self.root / rel), None)
        if server.client is not None and server.state == "ready":
            with contextlib.suppress(LspError):
                await server.client.close_document(file_uri(self.root / rel))
        return None

    async def _check_one(
        self, server: _Server, rel: str, text: str, deadline: float
    ) -> FileCheck | None:
        # The protocol's client is loaded by the first file a server checks (most
        # sessions edit none).
        from clover_code.tools.lsp.client import LspError, file_uri

        uri = file_uri(self.root / rel)
        language_id = server.spec.language_id(rel)
        task = self._start(server)
        if task is not None and not task.done():
            server.backlog[uri] = (language_id, text)
            with contextlib.suppress(TimeoutError, asyncio.CancelledError):
                left = deadline - asyncio.get_running_loop().time()
                await asyncio.wait_for(asyncio.shield(task), max(0.0, left))
        client = server.client
        if server.state in ("off", "idle"):
            return None  # off, or it ended while starting: a notice says so
        if client is None or server.state != "ready":
            return FileCheck(rel, server.program, waiting=self._waiting(server, starting=True))
        server.backlog.pop(uri, None)
        try:
            if client.text(uri) == text and client.answered(uri):
                pass  # nothing changed since its last answer
            else:
                after = client.count(uri)
                version = await client.sync(uri, text, language_id)
                if not await client.wait_fresh(uri, after, version, deadline):
                    if client.ended.is_set():
                        await self._lost(server, client)
                        return None
                    return FileCheck(rel, server.program, waiting=self._waiting(server))
        except LspError:
            return None
        published = client.diagnostics(uri)
        items = from_lsp(published.items if published else [], rel, self.severity)
        return FileCheck(rel, server.program, items)

    def _waiting(self, server: _Server, starting: bool = False) -> str:
        who = f"the {server.spec.language} language server"
        if server.program:
            who += f" ({server.program})"
        what = "is still starting" if starting else "did not answer in time"
        return f"{who} {what}; the diagnostics tool shows its answer later"

    # -- starting and stopping -----------------------------------------------

    def _start(self, server: _Server) -> asyncio.Task[None] | None:
        """The task starting ``server`` (a new one when it is idle); None when it is off."""
        if self._closing or server.state == "off":
            return None
        if server.state == "idle":
            if self._off is not None:
                self._say_off(server, self._off)
                return None
            server.state = "starting"
            server.starting = asyncio.get_running_loop().create_task(self._launch(server))
        return server.starting

    def _say_off(self, server: _Server, why: str) -> None:
        server.state = "off"
        self._notices.append(f"diagnostics for {server.spec.language} files are off: {why}.")

    async def _launch(self, server: _Server) -> None:
        from clover_code.tools.lsp.client import LspClient, LspError

        try:
            launched = await self._spawn(server)
            if launched is None:
                return
            process, program = launched
            server.program = program
            client = LspClient(process, self.root)
            client.start()
            try:
                await client.initialize(server.spec.init_options, START_TIMEOUT)
            except LspError as exc:
                await client.shutdown(0.1)
                self._ended(server, str(exc), process.stderr_tail())
                return
            server.client = client
            server.state = "ready"
            watcher = asyncio.get_running_loop().create_task(self._watch(server, client))
            self._tasks.add(watcher)
            watcher.add_done_callback(self._tasks.discard)
            for uri, (language_id, text) in list(server.backlog.items()):
                with contextlib.suppress(LspError):
                    await client.sync(uri, text, language_id)
            server.backlog.clear()
        except ToolError as exc:
            self._say_off(server, str(exc).rstrip("."))
        except Exception as exc:  # a server must never take the session down
            log.exception("language server start failed")
            self._say_off(server, f"its server could not start ({exc})")

    async def _spawn(self, server: _Server) -> tuple[SandboxProcess, str] | None:
        """The server's process and program, or None (and the notice) when none can run."""
        candidates = server.spec.candidates
        if self._host_check is not None:
            refusals = []
            for argv in candidates:
                checked = self._host_check(argv)
                if isinstance(checked, list):
                    return await self.sandbox.spawn(checked, cwd=self.root), argv[0]
                if isinstance(checked, str):
                    refusals.append(f"{argv[0]}: {checked}")
            if refusals:
                self._say_off(server, "; ".join(refusals))
            else:
                self._say_off(server, self._not_installed(server))
            return None
        process = await self.sandbox.spawn(["sh", "-c", _launch_script(candidates)], cwd=self.root)
        try:
            line = await asyncio.wait_for(process.stdout.readline(), START_TIMEOUT)
        except (TimeoutError, ValueError):
            line = b""
        words = line.decode("utf-8", "replace").split()
        if len(words) == 2 and words[0] == _STARTED and words[1].isdigit():
            return process, candidates[int(words[1])][0]
        await process.kill()
        if words[:1] == [_MISSING]:
            self._say_off(server, self._not_installed(server))
        else:
            tail = process.stderr_tail().strip().splitlines()[-1:] or ["no message"]
            self._say_off(server, f"its server could not start in the sandbox ({tail[0][:200]})")
        return None

    def _not_installed(self, server: _Server) -> str:
        where = "on this machine" if self._host_check is not None else "in the sandbox"
        names = server.spec.names()
        if server.spec.configured:
            return f"its server {names} is not installed {where}"
        return f"no language server for it is installed {where} (looked for {names})"

    async def _watch(self, server: _Server, client: LspClient) -> None:
        await client.ended.wait()
        await self._lost(server, client)

    async def _lost(self, server: _Server, client: LspClient) -> None:
        """``client``'s server ended by itself (said once, whoever sees it first)."""
        with contextlib.suppress(TimeoutError):  # for its last words on stderr
            await asyncio.wait_for(client.process.wait(), 2.0)
        if self._closing or server.client is not client:
            return
        self._ended(server, client.reason, client.process.stderr_tail())
        reap = asyncio.get_running_loop().create_task(client.shutdown(0.1))
        self._tasks.add(reap)
        reap.add_done_callback(self._tasks.discard)

    def _ended(self, server: _Server, reason: str, stderr: str) -> None:
        """The server ended by itself: start it again once; the second time, off."""
        server.client = None
        server.crashes += 1
        last = stderr.strip().splitlines()[-1:] if stderr.strip() else []
        why = reason + (f"; it said: {last[0][:200]}" if last else "")
        name = server.program or server.spec.language
        if server.crashes > 1:
            self._say_off(server, f"its server {name} stopped again ({why})")
            return
        server.state = "idle"
        self._notices.append(
            f"the {server.spec.language} language server {name} stopped ({why}); "
            "it starts again with the next change."
        )
