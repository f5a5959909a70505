"""Harness for the ACP tests (no tests here): an editor-like client and a wire recorder.

``EditorClient`` is the client side a real editor implements, built on the
SDK: it records session updates, answers permission requests from a script,
serves ``fs/*`` from the disk and runs ``terminal/*`` commands as real
processes. ``spawn_acp`` starts ``python -m clover_code.acp`` as a
subprocess over real stdio pipes and connects the SDK's client side to it;
``Wire`` records every JSON-RPC message both ways for golden comparison.
"""

from __future__ import annotations

import asyncio
import contextlib
import difflib
import json
import os
import sys
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
from acp import RequestError, spawn_agent_process
from acp.client.connection import ClientSideConnection
from acp.connection import StreamDirection, StreamEvent
from acp.schema import (
    AllowedOutcome,
    CreateTerminalResponse,
    DeniedOutcome,
    EnvVariable,
    KillTerminalResponse,
    PermissionOption,
    ReadTextFileResponse,
    ReleaseTerminalResponse,
    RequestPermissionResponse,
    TerminalExitStatus,
    TerminalOutputResponse,
    ToolCallUpdate,
    WaitForTerminalExitResponse,
    WriteTextFileResponse,
)

from tests.waiting import PATIENCE, env_flag, in_ci, within

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = Path(__file__).parent / "golden"


class _Terminal:
    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc
        self.output = bytearray()
        self.pump = asyncio.create_task(self._pump())

    async def _pump(self) -> None:
        assert self.proc.stdout is not None
        while chunk := await self.proc.stdout.read(4096):
            self.output += chunk


class EditorClient:
    """The client side of ACP, as an editor would implement it (for tests)."""

    def __init__(self, permission_answers: list[str] | None = None) -> None:
        self.permission_answers = list(permission_answers or [])
        """Option ids to pick, in order; "cancelled" answers with the cancelled outcome."""
        self.permission_requests: list[tuple[ToolCallUpdate, list[PermissionOption]]] = []
        self.updates: list[Any] = []
        self.reads: list[str] = []
        self.writes: list[tuple[str, str]] = []
        self.terminal_commands: list[list[str]] = []
        self._terminals: dict[str, _Terminal] = {}
        self._created = 0
        self._changed = asyncio.Event()

    # -- waiting ---------------------------------------------------------------------

    async def wait_for(
        self,
        predicate: Callable[[], bool],
        timeout: float = PATIENCE,
        message: str = "the expected session updates",
    ) -> None:
        """Wait until ``predicate()`` holds after some update arrived; fail after ``timeout``."""

        async def updated() -> None:
            while not predicate():
                self._changed.clear()
                await self._changed.wait()

        await within(updated(), message=message, timeout=timeout)

    def message_text(self) -> str:
        """All agent message text received so far."""
        return "".join(
            u.content.text
            for u in self.updates
            if u.session_update == "agent_message_chunk" and hasattr(u.content, "text")
        )

    # -- the Client interface -----------------------------------------------------------

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self.updates.append(update)
        self._changed.set()

    async def request_permission(
        self,
        session_id: str,
        tool_call: ToolCallUpdate,
        options: list[PermissionOption],
        **kwargs: Any,
    ) -> RequestPermissionResponse:
        self.permission_requests.append((tool_call, options))
        answer = self.permission_answers.pop(0) if self.permission_answers else "cancelled"
        if answer == "cancelled":
            return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
        return RequestPermissionResponse(
            outcome=AllowedOutcome(outcome="selected", option_id=answer)
        )

    async def read_text_file(
        self,
        session_id: str,
        path: str,
        line: int | None = None,
        limit: int | None = None,
        **kwargs: Any,
    ) -> ReadTextFileResponse:
        self.reads.append(path)
        try:
            return ReadTextFileResponse(content=Path(path).read_text("utf-8"))
        except OSError as exc:
            raise RequestError.resource_not_found(path) from exc

    async def write_text_file(
        self, session_id: str, path: str, content: str, **kwargs: Any
    ) -> WriteTextFileResponse:
        self.writes.append((path, content))
        Path(path).write_text(content, "utf-8")
        return WriteTextFileResponse()

    async def create_terminal(
        self,
        session_id: str,
        command: str,
        args: list[str] | None = None,
        env: list[EnvVariable] | None = None,
        cwd: str | None = None,
        output_byte_limit: int | None = None,
        **kwargs: Any,
    ) -> CreateTerminalResponse:
        self.terminal_commands.append([command, *(args or [])])
        proc = await asyncio.create_subprocess_exec(
            command,
            *(args or []),
            cwd=cwd,
            env={**os.environ, **{e.name: e.value for e in env or []}},
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
            start_new_session=True,
        )
        self._created += 1
        terminal_id = f"term-{self._created}"
        self._terminals[terminal_id] = _Terminal(proc)
        return CreateTerminalResponse(terminal_id=terminal_id)

    async def terminal_output(
        self, session_id: str, terminal_id: str, **kwargs: Any
    ) -> TerminalOutputResponse:
        term = self._terminals[terminal_id]
        status = None
        if term.proc.returncode is not None:
            await term.pump
            status = TerminalExitStatus(exit_code=max(term.proc.returncode, 0))
        text = term.output.decode("utf-8", errors="replace")
        return TerminalOutputResponse(output=text, truncated=False, exit_status=status)

    async def wait_for_terminal_exit(
        self, session_id: str, terminal_id: str, **kwargs: Any
    ) -> WaitForTerminalExitResponse:
        term = self._terminals[terminal_id]
        code = await term.proc.wait()
        await term.pump
        return WaitForTerminalExitResponse(exit_code=code if code >= 0 else None)

    async def kill_terminal(
        self, session_id: str, terminal_id: str, **kwargs: Any
    ) -> KillTerminalResponse:
        term = self._terminals[terminal_id]
        with contextlib.suppress(ProcessLookupError):
            os.killpg(term.proc.pid, 9)
        return KillTerminalResponse()

    async def release_terminal(
        self, session_id: str, terminal_id: str, **kwargs: Any
    ) -> ReleaseTerminalResponse:
        term = self._terminals.pop(terminal_id)
        if term.proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(term.proc.pid, 9)
        await term.proc.wait()
        await term.pump
        return ReleaseTerminalResponse()

    def on_connect(self, conn: Any) -> None:
        pass


class Wire:
    """Every JSON-RPC message, in the order the client saw or sent it."""

    def __init__(self) -> None:
        self.messages: list[dict[str, Any]] = []

    def observe(self, event: StreamEvent) -> None:
        arrow = "agent->client" if event.direction == StreamDirection.INCOMING else "client->agent"
        self.messages.append({"dir": arrow, "msg": event.message})

    def normalized(self, replacements: dict[str, str]) -> list[dict[str, Any]]:
        """The messages with machine-specific strings replaced (longest first)."""
        text = json.dumps(self.messages)
        for old in sorted(replacements, key=len, reverse=True):
            text = text.replace(json.dumps(old)[1:-1], replacements[old])
        normalized: list[dict[str, Any]] = json.loads(text)
        return normalized


def check_golden(name: str, actual: list[dict[str, Any]]) -> None:
    """Compare with ``golden/<name>``; ``UPDATE_GOLDEN=1`` rewrites it.

    A test that wrote its golden file compared nothing, so it never passes:
    under CI a missing file (or a rewrite) fails, elsewhere the file is written
    and the test is marked xfail saying so; the next run compares.
    """
    path = GOLDEN / name
    text = json.dumps(actual, indent=1, sort_keys=True, ensure_ascii=False) + "\n"
    rewrite = env_flag("UPDATE_GOLDEN")
    if rewrite or not path.exists():
        why = "UPDATE_GOLDEN is set" if rewrite else f"{path} is missing"
        if in_ci():
            pytest.fail(f"{why}; CI compares with the committed golden file", pytrace=False)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, "utf-8")
        pytest.xfail(f"{why}: wrote {path}; check it, commit it and run again")
    expected = path.read_text("utf-8")
    if text != expected:
        diff = "".join(
            difflib.unified_diff(
                expected.splitlines(keepends=True),
                text.splitlines(keepends=True),
                "golden",
                "actual",
                n=2,
            )
        )
        raise AssertionError(
            f"the ACP message sequence differs from {path} "
            f"(rerun with UPDATE_GOLDEN=1 if the change is intended):\n{diff[:6000]}"
        )


def agent_env(home: Path) -> dict[str, str]:
    """The environment for the agent process: isolated user dirs, this checkout first."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("CLOVER_")}
    env.update(
        XDG_DATA_HOME=str(home / "data"),
        XDG_CONFIG_HOME=str(home / "config"),
        PYTHONPATH=os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep),
    )
    return env


@contextlib.asynccontextmanager
async def spawn_acp(
    client: EditorClient,
    repo: Path,
    home: Path,
    *args: str,
    wire: Wire | None = None,
) -> AsyncIterator[tuple[ClientSideConnection, asyncio.subprocess.Process]]:
    """``python -m clover_code.acp ARGS`` in ``repo``, connected over real stdio."""
    log = (home / "agent-stderr.log").open("ab")
    try:
        async with spawn_agent_process(
            client,
            sys.executable,
            "-m",
            "clover_code.acp",
            *args,
            env=agent_env(home),
            cwd=repo,
            transport_kwargs={"stderr": log.fileno(), "shutdown_timeout": 10.0},
            observers=[wire.observe] if wire is not None else [],
        ) as (conn, proc):
            yield conn, proc
    finally:
        log.close()
