"""Domain rules for the web tools: ``docs.python.org``, ``*.readthedocs.io``, ``*``.

A rule is a host name matched case-insensitively; ``*.example.com`` matches
every subdomain of example.com (at any depth) but not example.com itself;
``*`` matches every host. Ports and schemes are not part of a rule.
"""

from __future__ import annotations

from collections.abc import Iterable
from urllib.parse import urlsplit

__all__ = ["domain_matches", "host_of", "matching_rule"]


def host_of(url: str) -> str | None:
    """The lower-cased host name of an http(s) URL, or None when it has none."""
    try:
        host = urlsplit(url.strip()).hostname
    except ValueError:
        return None
    return host.rstrip(".").lower() if host else None


def domain_matches(pattern: str, host: str) -> bool:
    """Whether the domain rule ``pattern`` covers ``host``."""
    rule = pattern.strip().rstrip(".").lower()
    name = host.rstrip(".").lower()
    if rule == "*":
        return True
    if rule.startswith("*."):
        return name.endswith(rule[1:]) and len(name) > len(rule) - 1
    return name == rule


def matching_rule(patterns: Iterable[str], host: str) -> str | None:
    """The first of ``patterns`` that covers ``host``, or None."""
    return next((p for p in patterns if domain_matches(p, host)), None)
