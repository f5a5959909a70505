"""GET one web page within limits: redirects, size, time, content types.

``Fetcher.get`` follows redirects itself, hop by hop: each hop's host is
resolved and checked by the ``AddressGuard`` and the connection goes to that
checked address (the name stays in the Host header and TLS SNI, so
certificates are still verified against it). A redirect to another host is
followed only when ``follow`` says so (the domain allow rules); otherwise
the page says where it leads, and fetching that URL is a call of its own,
with its own approval. The body is read as a stream and cut at
``max_bytes``, so a huge page never sits in memory whole.
"""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import json
import re
from collections.abc import Callable
from dataclasses import dataclass

import httpx

import clover_code
from clover_code.errors import ToolError
from clover_code.net.guard import AddressGuard, pinned_url
from clover_code.protocol.json_text import loads_bounded

__all__ = ["TEXT_TYPES", "FetchLimits", "Fetcher", "Page"]

TEXT_TYPES = ("text/html", "text/plain", "application/json", "text/*", "application/*+json")
"""What web_fetch reads (anything else is refused without reading the body)."""

_REDIRECTS = frozenset({301, 302, 303, 307, 308})
_META_CHARSET = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?([A-Za-z0-9._:-]+)""", re.I)
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


@dataclass(frozen=True, slots=True)
class FetchLimits:
    """How far one fetch may go."""

    max_bytes: int = 5_000_000
    timeout: float = 30.0
    max_redirects: int = 5


@dataclass(frozen=True, slots=True)
class Page:
    """What a fetch got: the final URL, its status and type, and the decoded text."""

    url: str
    status: int
    content_type: str
    text: str
    truncated: bool = False
    """The body was longer than ``max_bytes`` and was cut there."""
    redirect: str | None = None
    """A redirect to another host that was not followed (its target)."""

    @property
    def is_html(self) -> bool:
        """Whether the text is HTML (to be turned into Markdown)."""
        return self.content_type in ("text/html", "application/xhtml+xml")


class Fetcher:
    """Fetches pages through an ``AddressGuard`` within ``FetchLimits``."""

    def __init__(
        self,
        guard: AddressGuard,
        limits: FetchLimits,
        follow: Callable[[str], bool] = lambda _host: False,
    ) -> None:
        self._guard = guard
        self.limits = limits
        self._follow = follow

    async def get(self, url: str) -> Page:
        """Fetch ``url``; ``ToolError`` for every failure, in one sentence."""
        limit = self.limits.timeout
        try:
            async with asyncio.timeout(limit):
                return await self._get(url)
        except TimeoutError:
            raise ToolError(
                f"fetching {url} took longer than {limit:g} s; it was stopped."
            ) from None
        except httpx.HTTPError as exc:
            raise ToolError(f"fetching {url} failed: {exc or type(exc).__name__}.") from None

    async def _get(self, url: str) -> Page:
        current = _parse(url)
        first_host = current.host
        timeout = httpx.Timeout(self.limits.timeout)
        # trust_env off: a proxy from the environment would make the address check moot.
        async with httpx.AsyncClient(timeout=timeout, trust_env=False) as client:
            for _hop in range(self.limits.max_redirects + 1):
                address = await self._guard.resolve(current.host, current.port or _port(current))
                headers = {
                    "Host": current.netloc.decode("ascii"),
                    "User-Agent": f"clover-code/{clover_code.__version__} (web_fetch)",
                    "Accept": "text/html, text/plain, application/json;q=0.9, text/*;q=0.8",
                    "Accept-Encoding": "identity",
                }
                extensions = {"sni_hostname": current.host} if current.scheme == "https" else {}
                request = client.build_request(
                    "GET", pinned_url(current, address), headers=headers, extensions=extensions
                )
                response = await client.send(request, stream=True)
                try:
                    location = response.headers.get("location")
                    if response.status_code in _REDIRECTS and location:
                        target = _parse(str(current.join(location)))
                        if target.host != first_host and not self._follow(target.host):
                            return Page(
                                str(current), response.status_code, "", "", redirect=str(target)
                            )
                        current = target
                        continue
                    return await self._read(current, response)
                finally:
                    await response.aclose()
        raise ToolError(f"{url} redirected more than {self.limits.max_redirects} times.")

    async def _read(self, url: httpx.URL, response: httpx.Response) -> Page:
        raw_type = response.headers.get("content-type", "text/plain")
        content_type = raw_type.split(";", 1)[0].strip().lower() or "text/plain"
        if not _is_text(content_type):
            raise ToolError(
                f"{url} is {content_type}, which web_fetch does not read (it reads text, "
                "HTML and JSON)."
            )
        body = bytearray()
        truncated = False
        async for chunk in response.aiter_bytes():
            room = self.limits.max_bytes - len(body)
            if len(chunk) > room:
                # Stop at the cap: the rest is never downloaded.
                body += chunk[:room]
                truncated = True
                break
            body += chunk
        text = _decode(bytes(body), response.charset_encoding, content_type)
        return Page(str(url), response.status_code, content_type, text, truncated)


def _parse(url: str) -> httpx.URL:
    try:
        parsed = httpx.URL(url.strip())
    except (httpx.InvalidURL, ValueError, TypeError):
        raise ToolError(f"'{url}' is not a valid URL.") from None
    if parsed.scheme not in ("http", "https"):
        raise ToolError(f"'{url}' is not an http:// or https:// URL.")
    if not parsed.host:
        raise ToolError(f"'{url}' has no host.")
    return parsed


def _port(url: httpx.URL) -> int:
    return 443 if url.scheme == "https" else 80


def _is_text(content_type: str) -> bool:
    main, _, sub = content_type.partition("/")
    return (
        main == "text"
        or content_type in ("application/json", "application/xhtml+xml", "application/xml")
        or sub.endswith("+json")
        or sub.endswith("+xml")
    )


def _decode(body: bytes, declared: str | None, content_type: str) -> str:
    """The body as text: the declared charset, a meta tag's, else UTF-8; bytes
    that do not decode become U+FFFD, and control characters are dropped."""
    charset = declared
    if charset is None and content_type in ("text/html", "application/xhtml+xml"):
        found = _META_CHARSET.search(body[:4096])
        charset = found.group(1).decode("ascii") if found else None
    try:
        codec = codecs.lookup(charset or "utf-8").name
    except LookupError:
        codec = "utf-8"  # an unknown label: read it as UTF-8 rather than fail
    text = body.decode(codec, errors="replace")
    if content_type == "application/json" or content_type.endswith("+json"):
        # Not valid JSON after all: show it as it came.
        with contextlib.suppress(ValueError):
            text = json.dumps(loads_bounded(text), indent=2, ensure_ascii=False)
    return _CONTROL.sub("", text)
