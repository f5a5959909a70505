"""``LspClient``: one language server, spoken to over its stdin and stdout.

Only what diagnostics need: ``initialize`` (the server's capabilities),
``textDocument/didOpen``, ``didChange`` (the whole text each time),
``didSave`` and ``didClose``, the diagnostics the server publishes, and
``shutdown`` + ``exit``. Requests the server makes of the client get the
answers an editor without those features gives (``workspace/configuration``:
nothing configured; registrations and progress tokens: accepted; anything
else: method not found), so no server waits on us.

Diagnostics are kept per document with a count of publications, so a caller
can wait for the first one published after its change (``wait_fresh``).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from clover_code.tools.lsp.framing import FramingError, encode, read_message
from clover_code.tools.sandbox.base import SandboxProcess

__all__ = ["LspClient", "LspError", "Published", "file_uri", "uri_path"]

log = logging.getLogger(__name__)

SETTLE = 0.15
"""Seconds to wait after a document's fresh diagnostics for a second publication that
completes them (some servers publish syntax and semantic problems separately)."""


class LspError(Exception):
    """The server failed, ended or answered a request with an error; the text says which."""


def file_uri(path: Path) -> str:
    """The ``file://`` URI of an absolute path."""
    return path.as_uri()


def uri_path(uri: str) -> Path | None:
    """The path of a ``file://`` URI (None for other schemes)."""
    from urllib.parse import unquote, urlsplit

    parts = urlsplit(uri)
    if parts.scheme != "file":
        return None
    return Path(unquote(parts.path))


@dataclass(slots=True)
class Published:
    """A document's latest diagnostics as the server published them."""

    items: list[dict[str, Any]] = field(default_factory=list)
    version: int | None = None
    count: int = 0
    """How many times diagnostics were published for it."""


@dataclass(slots=True)
class _Document:
    version: int
    text: str


class LspClient:
    """Speaks LSP to one server process; ``start`` then ``initialize`` before use."""

    def __init__(self, process: SandboxProcess, root: Path) -> None:
        self.process = process
        self.root = root
        self.capabilities: dict[str, Any] = {}
        self.server_name = ""
        self._ids = itertools.count(1)
        self._pending: dict[int, asyncio.Future[Any]] = {}
        self._published: dict[str, Published] = {}
        self._changed = asyncio.Condition()
        self._documents: dict[str, _Document] = {}
        self._reader: asyncio.Task[None] | None = None
        self.ended = asyncio.Event()
        """Set once the server's output ended (it exited or crashed)."""
        self.reason = ""
        """Why it ended, when it did."""

    # -- the connection ------------------------------------------------------

    def start(self) -> None:
        """Start reading what the server writes."""
        self._reader = asyncio.get_running_loop().create_task(self._read_loop())

    async def _read_loop(self) -> None:
        reason = "its output ended"
        try:
            while (message := await read_message(self.process.stdout)) is not None:
                await self._handle(message)
        except FramingError as exc:
            reason = str(exc)
        except (OSError, ConnectionError) as exc:
            reason = f"reading from it failed ({exc})"
        self._end(reason)
        async with self._changed:  # wake whoever waits for diagnostics
            self._changed.notify_all()

    def _end(self, reason: str) -> None:
        if self.ended.is_set():
            return
        self.reason = reason
        self.ended.set()
        for future in self._pending.values():
            if not future.done():
                future.set_exception(LspError(f"the server ended: {reason}"))
        self._pending.clear()

    async def _send(self, message: dict[str, Any]) -> None:
        if self.ended.is_set():
            raise LspError(f"the server ended: {self.reason}")
        try:
            await self.process.write(encode(message))
        except (OSError, ConnectionError) as exc:
            self._end(f"writing to it failed ({exc})")
            raise LspError(f"the server ended: {self.reason}") from None

    async def request(self, method: str, params: Any, timeout: float) -> Any:
        """Send a request and wait up to ``timeout`` seconds for its result."""
        request_id = next(self._ids)
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._pending[request_id] = future
        try:
            await self._send(
                {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
            )
            return await asyncio.wait_for(future, timeout)
        except TimeoutError:
            raise LspError(f"the server did not answer {method} within {timeout:g} s") from None
        finally:
            self._pending.pop(request_id, None)

    async def notify(self, method: str, params: Any) -> None:
        """Send a notification."""
        await self._send({"jsonrpc": "2.0", "method": method, "params": params})

    async def _handle(self, message: dict[str, Any]) -> None:
        method = message.get("method")
        if isinstance(method, str):
            if "id" in message:
                await self._answer(message["id"], method, message.get("params"))
            elif method == "textDocument/publishDiagnostics":
                await self._diagnostics(message.get("params"))
            return
        request_id = message.get("id")
        future = self._pending.pop(request_id, None) if isinstance(request_id, int) else None
        if future is None or future.done():
            return
        error = message.get("error")
        if isinstance(error, Mapping):
            text = str(error.get("message", "no message"))[:300]
            future.set_exception(LspError(f"the server answered with an error: {text}"))
        else:
            future.set_result(message.get("result"))

    async def _answer(self, request_id: Any, method: str, params: Any) -> None:
        """Answer a request from the server as a plain editor would."""
        result: Any = None
        if method == "workspace/configuration":
            items = params.get("items") if isinstance(params, Mapping) else None
            result = [{}] * (len(items) if isinstance(items, list) else 0)
        elif method == "workspace/workspaceFolders":
            result = [{"uri": file_uri(self.root), "name": self.root.name}]
        elif method not in (
            "client/registerCapability",
            "client/unregisterCapability",
            "window/workDoneProgress/create",
            "window/showMessageRequest",
        ):
            error = {"code": -32601, "message": f"{method} is not supported"}
            await self._send({"jsonrpc": "2.0", "id": request_id, "error": error})
            return
        await self._send({"jsonrpc": "2.0", "id": request_id, "result": result})

    async def _diagnostics(self, params: Any) -> None:
        if not isinstance(params, Mapping) or not isinstance(params.get("uri"), str):
            return
        items = params.get("diagnostics")
        version = params.get("version")
        async with self._changed:
            published = self._published.setdefault(params["uri"], Published())
            published.items = (
                [d for d in items if isinstance(d, dict)] if isinstance(items, list) else []
            )
            published.version = version if isinstance(version, int) else None
            published.count += 1
            self._changed.notify_all()

    # -- the session ---------------------------------------------------------

    async def initialize(self, options: Mapping[str, Any] | None, timeout: float) -> None:
        """The handshake: ``initialize`` with what this client can do, then ``initialized``."""
        params = {
            # The server may live in another pid namespace; our pid would mean nothing there
            # (and servers that watch it would exit at once).
            "processId": None,
            "clientInfo": {"name": "clover-code"},
            "rootUri": file_uri(self.root),
            "rootPath": str(self.root),
            "workspaceFolders": [{"uri": file_uri(self.root), "name": self.root.name}],
            "capabilities": {
                "textDocument": {
                    "synchronization": {"didSave": True, "dynamicRegistration": False},
                    "publishDiagnostics": {"versionSupport": True, "relatedInformation": False},
                },
                "workspace": {"configuration": True, "workspaceFolders": True},
                "window": {"workDoneProgress": False},
                "general": {"positionEncodings": ["utf-16"]},
            },
            "initializationOptions": dict(options) if options else None,
        }
        result = await self.request("initialize", params, timeout)
        if isinstance(result, Mapping):
            caps = result.get("capabilities")
            self.capabilities = dict(caps) if isinstance(caps, Mapping) else {}
            info = result.get("serverInfo")
            if isinstance(info, Mapping) and isinstance(info.get("name"), str):
                self.server_name = info["name"][:80]
        await self.notify("initialized", {})

    def _wants_save(self) -> tuple[bool, bool]:
        """Whether the server wants ``didSave``, and with the text."""
        sync = self.capabilities.get("textDocumentSync")
        if not isinstance(sync, Mapping):
            return True, False  # a bare sync kind: didSave is harmless and some lint on it
        save = sync.get("save")
        if isinstance(save, Mapping):
            return True, bool(save.get("includeText"))
        return bool(save), False

    def count(self, uri: str) -> int:
        """How many times diagnostics were published for ``uri`` so far."""
        published = self._published.get(uri)
        return published.count if published is not None else 0

    def diagnostics(self, uri: str) -> Published | None:
        """The latest diagnostics published for ``uri``."""
        return self._published.get(uri)

    def answered(self, uri: str) -> bool:
        """Whether the server published diagnostics for the document's current text (as
        far as it says which version it checked)."""
        published, document = self._published.get(uri), self._documents.get(uri)
        if published is None or document is None:
            return False
        return published.version is None or published.version >= document.version

    def is_open(self, uri: str) -> bool:
        """Whether the document is open in the server."""
        return uri in self._documents

    def text(self, uri: str) -> str | None:
        """The text the server has of ``uri`` (None: not open)."""
        document = self._documents.get(uri)
        return document.text if document is not None else None

    async def sync(self, uri: str, text: str, language_id: str) -> int:
        """Open the document, or send its new text; then save it. Returns its version."""
        document = self._documents.get(uri)
        if document is None:
            document = self._documents[uri] = _Document(1, text)
            item = {"uri": uri, "languageId": language_id, "version": 1, "text": text}
            await self.notify("textDocument/didOpen", {"textDocument": item})
        else:
            document.version += 1
            document.text = text
            await self.notify(
                "textDocument/didChange",
                {
                    "textDocument": {"uri": uri, "version": document.version},
                    "contentChanges": [{"text": text}],
                },
            )
        save, include_text = self._wants_save()
        if save:
            params: dict[str, Any] = {"textDocument": {"uri": uri}}
            if include_text:
                params["text"] = text
            await self.notify("textDocument/didSave", params)
        return document.version

    async def close_document(self, uri: str) -> None:
        """Close the document (its file was deleted); forget its diagnostics."""
        if self._documents.pop(uri, None) is not None:
            await self.notify("textDocument/didClose", {"textDocument": {"uri": uri}})
        self._published.pop(uri, None)

    async def wait_fresh(self, uri: str, after: int, version: int, deadline: float) -> bool:
        """Wait until diagnostics for ``uri`` are published after the ``after``-th
        publication (for ``version`` or later, when the server says which), then
        briefly for a completing one; False when ``deadline`` (loop time) passes first."""
        loop = asyncio.get_running_loop()

        def fresh() -> bool:
            published = self._published.get(uri)
            if published is None or published.count <= after:
                return False
            return published.version is None or published.version >= version

        async with self._changed:
            try:
                await asyncio.wait_for(
                    self._changed.wait_for(lambda: fresh() or self.ended.is_set()),
                    max(0.0, deadline - loop.time()),
                )
            except TimeoutError:
                return False
            if not fresh():
                return False
            seen = self.count(uri)
            settle = min(SETTLE, max(0.0, deadline - loop.time()))
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(
                    self._changed.wait_for(lambda: self.count(uri) > seen), settle
                )
        return True

    async def shutdown(self, timeout: float) -> None:
        """``shutdown`` then ``exit``, each given at most ``timeout`` seconds; then the
        process is killed whatever it did."""
        try:
            if not self.ended.is_set():
                await self.request("shutdown", None, timeout)
                await self.notify("exit", None)
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self.process.wait(), timeout)
        except LspError as exc:
            log.debug("language server shutdown: %s", exc)
        finally:
            await self.process.kill()
            if self._reader is not None:
                self._reader.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await self._reader
