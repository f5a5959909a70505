"""OAuth sign-in for HTTP MCP servers, through the official SDK's OAuth client.

When a server configured with ``oauth = true`` answers 401 and names its
authorization server, the SDK's ``OAuthClientProvider`` discovers it,
registers clover-code as a client, and sends the user's browser to sign in;
the answer comes back to a listener on a loopback port, and the tokens are
kept (for refreshing) in a file readable only by the user, in the user data
dir, one per server URL. Without a browser (headless on a server) sign-in
cannot finish and the server fails to start within its ``startup_timeout``.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import os
import socket
import webbrowser
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

from mcp.client.auth import OAuthClientProvider
from mcp.shared.auth import (
    AuthorizationCodeResult,
    OAuthClientInformationFull,
    OAuthClientMetadata,
    OAuthToken,
)
from pydantic import AnyUrl

from clover_code.config.settings import user_data_dir

__all__ = ["CallbackListener", "FileTokenStorage", "oauth_provider"]

_DONE = (
    b"HTTP/1.1 200 OK\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n"
    b"Signed in; you can close this tab and return to clover-code.\n"
)


class FileTokenStorage:
    """The SDK's ``TokenStorage``: tokens and client registration in one JSON file."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def _read(self) -> dict[str, object]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    def _write(self, key: str, value: dict[str, object]) -> None:
        data = self._read()
        data[key] = value
        self.path.parent.mkdir(parents=True, exist_ok=True)
        # Created private: the file holds bearer tokens.
        fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(data, fh)

    async def get_tokens(self) -> OAuthToken | None:
        """The stored tokens, if any."""
        value = self._read().get("tokens")
        return OAuthToken.model_validate(value) if isinstance(value, dict) else None

    async def set_tokens(self, tokens: OAuthToken) -> None:
        """Keep new tokens."""
        self._write("tokens", tokens.model_dump(mode="json", exclude_none=True))

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        """The stored client registration, if any."""
        value = self._read().get("client")
        return OAuthClientInformationFull.model_validate(value) if isinstance(value, dict) else None

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        """Keep the client registration."""
        self._write("client", client_info.model_dump(mode="json", exclude_none=True))


class CallbackListener:
    """A loopback port bound up front (the redirect URI must be known when the
    client registers) that waits for the browser's redirect after sign-in."""

    def __init__(self) -> None:
        self._socket = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._socket.bind(("127.0.0.1", 0))
        self._socket.listen(4)
        self.port = self._socket.getsockname()[1]

    @property
    def redirect_uri(self) -> str:
        """Where the authorization server sends the browser back to."""
        return f"http://127.0.0.1:{self.port}/callback"

    async def wait(self) -> AuthorizationCodeResult:
        """The code (and state) of the first redirect that carries one."""
        result: asyncio.Future[AuthorizationCodeResult] = asyncio.get_running_loop().create_future()

        async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            with contextlib.suppress(OSError, ValueError, asyncio.IncompleteReadError):
                line = (await reader.readline()).decode("latin-1").split(" ")
                query = parse_qs(urlsplit(line[1]).query) if len(line) > 1 else {}
                writer.write(_DONE if "code" in query else b"HTTP/1.1 400 Bad Request\r\n\r\n")
                await writer.drain()
                if "code" in query and not result.done():
                    state = query.get("state", [None])[0]
                    iss = query.get("iss", [None])[0]
                    result.set_result(
                        AuthorizationCodeResult(code=query["code"][0], state=state, iss=iss)
                    )
            writer.close()

        server = await asyncio.start_server(handle, sock=self._socket)
        try:
            return await result
        finally:
            server.close()


async def _open_browser(url: str) -> None:
    if not await asyncio.to_thread(webbrowser.open, url):
        raise RuntimeError(f"no browser could be opened to sign in; open {url} yourself")


def oauth_provider(name: str, server_url: str) -> OAuthClientProvider:
    """The SDK's OAuth client for one server, with tokens kept between sessions."""
    listener = CallbackListener()
    key = hashlib.sha256(server_url.encode()).hexdigest()[:16]
    storage = FileTokenStorage(user_data_dir() / "mcp-oauth" / f"{key}.json")
    metadata = OAuthClientMetadata(
        client_name=f"clover-code ({name})",
        redirect_uris=[AnyUrl(listener.redirect_uri)],
        grant_types=["authorization_code", "refresh_token"],
        response_types=["code"],
        token_endpoint_auth_method="none",
    )
    return OAuthClientProvider(
        server_url=server_url,
        client_metadata=metadata,
        storage=storage,
        redirect_handler=_open_browser,
        callback_handler=listener.wait,
    )
