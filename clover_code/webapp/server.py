"""textual-serve's server with ``AccessGuard`` on every request, and tab
processes (``TabProcess``) that stop with their tab and with the server."""

from __future__ import annotations

import asyncio
import shlex

from aiohttp import web
from textual_serve.server import Server, to_int

from clover_code.webapp.guard import AccessGuard
from clover_code.webapp.tabs import TabProcess

__all__ = ["GuardedServer"]


class GuardedServer(Server):
    """Serves the app command ``argv`` like textual-serve, behind the access checks."""

    def __init__(self, argv: list[str], host: str, port: int, token: str) -> None:
        super().__init__(shlex.join(argv), host=host, port=port, title="clover-code")
        self.argv = argv
        self.tabs: set[TabProcess] = set()
        self.guard = AccessGuard(host, port, token)
        self.guard.on_page = self._learn_url

    def _learn_url(self, request: web.Request) -> None:
        # The page's script and WebSocket URLs are built from public_url: use the
        # address the browser used (checked by the guard), not the bind address.
        self.public_url = f"{request.scheme}://{request.host}"

    async def _make_app(self) -> web.Application:
        app = await super()._make_app()
        app.middlewares.append(self.guard.middleware)
        return app

    async def handle_websocket(self, request: web.Request) -> web.WebSocketResponse:
        """One tab: its app process lives exactly as long as this WebSocket."""
        websocket = web.WebSocketResponse(heartbeat=15)
        await websocket.prepare(request)
        tab = TabProcess(
            self.argv,
            write_bytes=websocket.send_bytes,
            write_str=websocket.send_str,
            close=websocket.close,
            download_manager=self.download_manager,
            debug=self.debug,
        )
        self.tabs.add(tab)
        try:
            width = to_int(request.query.get("width", "80"), 80)
            height = to_int(request.query.get("height", "24"), 24)
            await tab.start(width, height)
            await self._process_messages(websocket, tab)
        finally:
            await tab.stop()
            self.tabs.discard(tab)
        return websocket

    async def on_shutdown(self, app: web.Application) -> None:
        """Ctrl+C or SIGTERM of the server: every tab's app stops before it exits."""
        await asyncio.gather(*(tab.stop() for tab in list(self.tabs)))
