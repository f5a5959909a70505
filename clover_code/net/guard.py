"""Which addresses the web tools may connect to.

A host is resolved once, every address it resolves to is checked, and the
connection then goes to the checked address (``pinned_url``), so a DNS answer
that changes between the check and the connection (DNS rebinding) cannot
swap in an internal address. Private, loopback, link-local, multicast,
reserved and unspecified addresses (and IPv4 ones wrapped in IPv6) are
refused unless ``web_allow_private`` allows them: ``true`` for all, or a
list of addresses and networks (``"127.0.0.1"``, ``"10.0.0.0/8"``).
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from collections.abc import Sequence

import httpx

from clover_code.errors import ToolError

__all__ = ["AddressGuard", "IPAddress", "is_internal", "pinned_url"]

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


def is_internal(address: IPAddress) -> bool:
    """Whether ``address`` is not a public internet address."""
    if isinstance(address, ipaddress.IPv6Address):
        inner = address.ipv4_mapped or address.sixtofour
        if inner is not None:
            return is_internal(inner)
    return bool(
        address.is_private
        or address.is_loopback
        or address.is_link_local
        or address.is_multicast
        or address.is_reserved
        or address.is_unspecified
        or not address.is_global
    )


class AddressGuard:
    """Resolves hosts and refuses internal addresses the settings do not allow."""

    def __init__(self, allow_private: bool | Sequence[str] = False) -> None:
        self._all = allow_private is True
        self._networks: list[ipaddress.IPv4Network | ipaddress.IPv6Network] = []
        if not isinstance(allow_private, bool):
            for entry in allow_private:
                self._networks.append(ipaddress.ip_network(entry.strip(), strict=False))

    def allowed(self, address: IPAddress) -> bool:
        """Whether a connection to ``address`` may be made."""
        if self._all or not is_internal(address):
            return True
        return any(address in network for network in self._networks)

    async def resolve(self, host: str, port: int) -> IPAddress:
        """The address to connect to for ``host``; ``ToolError`` when it is refused."""
        try:
            literal = ipaddress.ip_address(host.strip("[]"))
        except ValueError:
            literal = None
        if literal is not None:
            addresses = [literal]
        else:
            try:
                infos = await asyncio.get_running_loop().getaddrinfo(
                    host, port, type=socket.SOCK_STREAM
                )
            except (OSError, UnicodeError) as exc:
                raise ToolError(f"the host '{host}' could not be resolved ({exc}).") from None
            addresses = list(
                dict.fromkeys(ipaddress.ip_address(str(info[4][0]).split("%")[0]) for info in infos)
            )
            if not addresses:
                raise ToolError(f"the host '{host}' has no address.")
        # Every answer is checked: a name with one public and one internal
        # address is refused rather than left to chance.
        for address in addresses:
            if not self.allowed(address):
                raise ToolError(
                    f"'{host}' resolves to {address}, a private, loopback or link-local "
                    "address, which web_fetch does not connect to (the user can allow it "
                    "with web_allow_private in their config)."
                )
        return addresses[0]


def pinned_url(url: httpx.URL, address: IPAddress) -> httpx.URL:
    """``url`` aimed at the checked ``address`` instead of its host name."""
    return url.copy_with(host=str(address))
