"""Who may use the served app: checks run on every HTTP and WebSocket request.

- Token: every request must carry the random token the server printed, in the
  URL (``?token=...``) or in the cookie the first page sets (for its scripts
  and its WebSocket), loopback included: any local user, or any program of
  this one, can reach a loopback port.
- Host: on a loopback address only ``127.0.0.1``, ``localhost``, ``[::1]`` and
  the address bound (with the port) are answered, so a web page cannot reach
  the app through a DNS name that it points at 127.0.0.1 (DNS rebinding).
- Origin: a WebSocket (which drives the agent) is accepted only from a page of
  the same origin; browsers let any site open a WebSocket to localhost
  otherwise.
"""

from __future__ import annotations

import ipaddress
import secrets
from collections.abc import Awaitable, Callable
from urllib.parse import urlsplit

from aiohttp import web

__all__ = ["COOKIE", "AccessGuard", "is_loopback", "url_host"]

COOKIE = "clover_web_token"

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def is_loopback(host: str) -> bool:
    """Whether ``host`` (a name or address to bind) is this machine only."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def url_host(host: str) -> str:
    """``host`` as it is written in a URL and a Host header (IPv6 in brackets)."""
    host = host.strip("[]")
    return f"[{host}]" if ":" in host else host


class AccessGuard:
    """The aiohttp middleware that enforces the checks above."""

    def __init__(self, host: str, port: int, token: str) -> None:
        self.token = token
        self.hosts: frozenset[str] | None = None
        if is_loopback(host):
            names = ("127.0.0.1", "localhost", "[::1]", url_host(host).lower())
            self.hosts = frozenset(f"{name}:{port}" for name in names)
        self.on_page: Callable[[web.Request], None] = lambda _request: None
        """Called for each page request that passed (the server learns its public URL)."""

    def _refuse(self, why: str) -> web.Response:
        return web.Response(status=403, text=f"clover-code web: {why}\n")

    def _token_ok(self, request: web.Request) -> bool:
        given = request.query.get("token") or request.cookies.get(COOKIE) or ""
        return secrets.compare_digest(given.encode(), self.token.encode())

    @web.middleware
    async def middleware(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        """Answer the request only when every check passes."""
        if self.hosts is not None and request.host.lower() not in self.hosts:
            return self._refuse("unknown Host; open the address the server printed.")
        origin = request.headers.get("Origin")
        if origin is not None and urlsplit(origin).netloc.lower() != request.host.lower():
            return self._refuse("requests from other sites are refused.")
        if not self._token_ok(request):
            return self._refuse("the token is missing or wrong; open the URL the server printed.")
        if request.path == "/":
            self.on_page(request)
        response = await handler(request)
        if request.query.get("token") and not response.prepared:
            # The page's scripts and WebSocket carry the cookie instead of the URL's token.
            response.set_cookie(COOKIE, self.token, httponly=True, samesite="Strict")
        return response
