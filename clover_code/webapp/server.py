"""textual-serve's server with ``AccessGuard`` on every request."""

from __future__ import annotations

from aiohttp import web
from textual_serve.server import Server

from clover_code.webapp.guard import AccessGuard

__all__ = ["GuardedServer"]


class GuardedServer(Server):
    """Serves the app command like textual-serve, behind the access checks."""

    def __init__(self, command: str, host: str, port: int, token: str | None) -> None:
        super().__init__(command, host=host, port=port, title="clover-code")
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
