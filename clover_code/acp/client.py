"""What a session asks of the editor: ordered updates, approvals, file access.

- ``Outbox`` sends session updates one at a time, in order, from its own
  task, so the agent loop never waits on the editor to render; ``drain``
  waits until everything queued is out (before a reply or a request, so the
  editor sees events in the order they happened).
- ``EditorApprover`` is the ``Approver`` that asks with
  ``session/request_permission``: allow once, allow always (a command prefix,
  or auto-edit mode for edits), reject.
- ``EditorFiles`` is the ``FileAccess`` the file tools use: the editor's
  buffers through ``fs/read_text_file`` / ``fs/write_text_file`` when the
  client offers them, else the disk; it keeps each write's old and new text
  so the editor can show the edit as a diff.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import errno
import io
import logging
import threading
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Coroutine
from pathlib import Path
from typing import Any, BinaryIO, TypeVar

from acp import (
    Client,
    RequestError,
    text_block,
    tool_content,
    tool_diff_content,
    update_tool_call,
)
from acp.schema import AllowedOutcome, PermissionOption, ToolCallUpdate

from clover_code.acp.tool_cards import ToolContent, acp_kind, fenced, tool_title
from clover_code.acp.updates import Update
from clover_code.acp.waits import Waits
from clover_code.agent.open import ApprovalRequest, Decision
from clover_code.errors import ToolError
from clover_code.fs.atomic import atomic_write
from clover_code.fs.binary import BINARY_SAMPLE, looks_binary

__all__ = ["EditorApprover", "EditorFiles", "Outbox", "describe_error"]

log = logging.getLogger(__name__)

T = TypeVar("T")

_REMEMBERED_FILES = 64
"""How many files' last-read content is kept to show edits as diffs."""
_REMEMBER_BYTES = 4 * 1024 * 1024
"""Files larger than this are read from disk as a stream and not remembered."""


def describe_error(exc: BaseException) -> str:
    """One line for an error the editor returned (its message and any details)."""
    if isinstance(exc, RequestError):
        data = exc.data
        detail = data.get("message") or data.get("details") if isinstance(data, dict) else None
        return f"{exc} ({detail})" if detail else str(exc)
    return str(exc) or type(exc).__name__


class Outbox:
    """Session updates for one session, sent in order by a background task."""

    def __init__(self, client: Client) -> None:
        self._client = client
        self._queue: asyncio.Queue[Update] = asyncio.Queue()
        self._task: asyncio.Task[None] | None = None
        self._broken = False
        self.session_id = ""

    def start(self, session_id: str) -> None:
        """Begin sending (updates queued before this wait for it)."""
        self.session_id = session_id
        if self._task is None:
            self._task = asyncio.create_task(self._run(), name=f"acp-outbox-{session_id}")

    def put(self, update: Update) -> None:
        """Queue one update."""
        self._queue.put_nowait(update)

    async def drain(self) -> None:
        """Wait until every queued update was handed to the connection (or sending stopped)."""
        if self._task is None or self._task.done():
            return
        joined = asyncio.ensure_future(self._queue.join())
        try:
            await asyncio.wait({joined, self._task}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            joined.cancel()

    async def close(self) -> None:
        """Stop sending; what is still queued is dropped."""
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)

    async def _run(self) -> None:
        while True:
            update = await self._queue.get()
            try:
                if not self._broken:
                    await self._client.session_update(session_id=self.session_id, update=update)
            except (ConnectionError, OSError, RequestError) as exc:
                # The editor went away; the session goes on recording its transcript.
                self._broken = True
                log.warning("session updates stopped: %s", describe_error(exc))
            finally:
                self._queue.task_done()


class EditorApprover:
    """Asks the editor's user through ``session/request_permission``."""

    shows_diff = True
    """An edit request carries the change as a diff the editor draws (costs one read
    of the file through the editor, which also sees unsaved buffers)."""

    def __init__(
        self,
        client: Client,
        outbox: Outbox,
        *,
        allow_edits: Callable[[], Awaitable[None]],
        tool_call_id: Callable[[str], str] = str,
        waits: Waits | None = None,
    ) -> None:
        self._client = client
        self._outbox = outbox
        self._allow_edits = allow_edits
        self._tool_call_id = tool_call_id
        self._waits = waits
        """Times the request: a long wait runs the Notification hooks."""

    async def request(self, request: ApprovalRequest) -> Decision:
        """Show the request in the editor and turn the answer into a decision."""
        options = [PermissionOption(option_id="allow_once", name="Allow once", kind="allow_once")]
        if request.kind == "execute" and request.prefix:
            always = f"Always allow `{request.prefix}` commands"
            options.append(
                PermissionOption(option_id="allow_always", name=always, kind="allow_always")
            )
        elif request.kind == "edit":
            always = "Always allow edits (auto-edit mode)"
            options.append(
                PermissionOption(option_id="allow_always", name=always, kind="allow_always")
            )
        options.append(PermissionOption(option_id="reject_once", name="Reject", kind="reject_once"))
        call_id = self._tool_call_id(request.call_id)
        call = ToolCallUpdate(
            tool_call_id=call_id,
            title=tool_title(request.name, request.summary, dict(request.arguments)),
            kind=acp_kind(request.kind),
            status="pending",
            raw_input=dict(request.arguments),
            content=_change(request),
        )
        await self._outbox.drain()
        wait = f"approval:{call_id}"
        if self._waits is not None:
            message = f"clover-code needs your permission to use {request.name}."
            self._waits.start(wait, message, "permission_prompt")
        try:
            answer = await self._client.request_permission(
                session_id=self._outbox.session_id, tool_call=call, options=options
            )
        except (ConnectionError, OSError, RequestError) as exc:
            return Decision(
                allowed=False,
                feedback=f"the editor could not ask the user ({describe_error(exc)}).",
            )
        finally:
            if self._waits is not None:
                self._waits.end(wait)
        outcome = answer.outcome
        choice = outcome.option_id if isinstance(outcome, AllowedOutcome) else None
        if choice == "allow_once" or choice == "allow_always":
            self._outbox.put(update_tool_call(call_id, status="in_progress"))
            if choice == "allow_always" and request.kind == "edit":
                await self._allow_edits()
            remember = request.prefix if choice == "allow_always" else None
            return Decision(allowed=True, remember_prefix=remember)
        if choice is None:
            return Decision(allowed=False, feedback="the user cancelled the request.")
        return Decision(allowed=False, feedback="the user rejected this call in the editor.")


class EditorFiles:
    """``FileAccess`` through the editor where offered, else the disk.

    Its methods run in worker threads (the file tools use
    ``asyncio.to_thread``) and hand requests to the connection's loop.
    """

    def __init__(
        self,
        client: Client,
        outbox: Outbox,
        loop: asyncio.AbstractEventLoop,
        *,
        read: bool,
        write: bool,
        timeout: float = 60.0,
    ) -> None:
        self._client = client
        self._outbox = outbox
        self._loop = loop
        self.reads_editor = read
        self.writes_editor = write
        self._timeout = timeout
        self._lock = threading.Lock()
        self._seen: OrderedDict[Path, bytes] = OrderedDict()
        self._edits: OrderedDict[Path, tuple[str | None, str]] = OrderedDict()

    def open_read(self, path: Path) -> BinaryIO:
        """The editor's buffer of ``path`` (unsaved changes included), else the file."""
        if self.reads_editor and not _binary_on_disk(path):
            try:
                answer = self._call(
                    self._client.read_text_file(session_id=self._outbox.session_id, path=str(path)),
                    f"read {path}",
                )
            except ToolError:
                if not path.exists():
                    # Editors answer an error for a file that does not exist: a new file.
                    raise FileNotFoundError(errno.ENOENT, "no such file", str(path)) from None
                raise
            data = answer.content.encode("utf-8")
        elif path.stat().st_size > _REMEMBER_BYTES:
            return path.open("rb")
        else:
            data = path.read_bytes()
        self._remember(path, data)
        return io.BytesIO(data)

    def write_bytes(self, path: Path, data: bytes) -> None:
        """Write through the editor (so its buffer updates), else atomically on disk."""
        with self._lock:
            old = self._seen.get(path)
        if self.writes_editor:
            path.parent.mkdir(parents=True, exist_ok=True)
            self._call(
                self._client.write_text_file(
                    session_id=self._outbox.session_id,
                    path=str(path),
                    content=data.decode("utf-8"),
                ),
                f"write {path}",
            )
        else:
            atomic_write(path, data)
        before = None if old is None else old.decode("utf-8", errors="replace")
        with self._lock:
            self._edits[path] = (before, data.decode("utf-8", errors="replace"))
            while len(self._edits) > _REMEMBERED_FILES:
                self._edits.popitem(last=False)
        self._remember(path, data)

    def take_edit(self, path: Path) -> tuple[str | None, str] | None:
        """The (old, new) text of the last write to ``path``, once."""
        with self._lock:
            return self._edits.pop(path, None)

    def _remember(self, path: Path, data: bytes) -> None:
        with self._lock:
            self._seen[path] = data
            self._seen.move_to_end(path)
            while len(self._seen) > _REMEMBERED_FILES:
                self._seen.popitem(last=False)

    def _call(self, request: Coroutine[Any, Any, T], what: str) -> T:
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is self._loop:
            request.close()
            raise RuntimeError("EditorFiles blocks; call it from a worker thread")
        future = asyncio.run_coroutine_threadsafe(self._in_order(request), self._loop)
        try:
            return future.result(self._timeout)
        except concurrent.futures.TimeoutError:
            future.cancel()
            raise ToolError(
                f"the editor did not answer the request to {what} within {self._timeout:g} s"
            ) from None
        except (ConnectionError, OSError, RequestError) as exc:
            raise ToolError(f"the editor could not {what}: {describe_error(exc)}") from None

    async def _in_order(self, request: Coroutine[Any, Any, T]) -> T:
        try:
            await self._outbox.drain()
        except BaseException:
            request.close()
            raise
        return await request


def _binary_on_disk(path: Path) -> bool:
    """Whether the file on disk is binary (editors cannot hand those over as text)."""
    try:
        with path.open("rb") as handle:
            return looks_binary(handle.read(BINARY_SAMPLE))
    except OSError:
        return False


def _change(request: ApprovalRequest) -> list[ToolContent] | None:
    """An edit's change as ACP diff content (the editor draws it with context and line
    numbers); the unified diff as text where only that is known."""
    if request.preview is not None:
        change = request.preview
        return [tool_diff_content(str(change.path), change.after, change.before)]
    if request.diff:
        return [tool_content(text_block(fenced(request.diff, "diff")))]
    return None
