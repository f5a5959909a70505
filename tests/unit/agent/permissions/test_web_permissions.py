"""Approval of the web tools: domain rules, the modes, headless refusal, and
project files that would loosen web access."""

from __future__ import annotations

from pathlib import Path

import pytest

from clover_code.agent.permissions.approval import ApprovalRequest, RefuseApprover, verdict
from clover_code.agent.permissions.policy import PermissionPolicy
from clover_code.config.load import load_settings
from clover_code.config.loosening import loosening
from clover_code.config.settings import PermissionRules, Settings
from clover_code.config.trust import PROJECT_CONFIG, TrustStore
from clover_code.errors import ConfigError
from clover_code.net.domains import domain_matches, host_of
from clover_code.net.guard import AddressGuard

RULES = PermissionRules(
    allow={"web_fetch": ["docs.python.org", "*.readthedocs.io"]},
    deny={"web_fetch": ["evil.readthedocs.io"]},
)


@pytest.mark.parametrize(
    ("pattern", "host", "matches"),
    [
        ("docs.python.org", "docs.python.org", True),
        ("docs.python.org", "DOCS.Python.org.", True),
        ("docs.python.org", "python.org", False),
        ("docs.python.org", "docs.python.org.evil.com", False),
        ("*.readthedocs.io", "pip.readthedocs.io", True),
        ("*.readthedocs.io", "a.b.readthedocs.io", True),
        ("*.readthedocs.io", "readthedocs.io", False),
        ("*.readthedocs.io", "evilreadthedocs.io", False),
        ("*", "anything.example", True),
    ],
)
def test_domain_rules(pattern: str, host: str, matches: bool) -> None:
    assert domain_matches(pattern, host) is matches


def test_host_of() -> None:
    assert host_of("https://User:pw@Docs.Python.org:8443/x?y") == "docs.python.org"
    assert host_of("not a url") is None


@pytest.mark.parametrize("mode", ["read-only", "ask", "auto-edit", "full-auto"])
def test_fetch_asks_in_every_mode_but_full_auto(tmp_path: Path, mode: str) -> None:
    policy = PermissionPolicy(RULES, tmp_path)
    unknown = policy.decide(mode, "web_fetch", "fetch", {"url": "https://example.com/"})  # type: ignore[arg-type]
    assert unknown.verdict == ("allow" if mode == "full-auto" else "ask")
    allowed = policy.decide(mode, "web_fetch", "fetch", {"url": "https://pip.readthedocs.io/en/"})  # type: ignore[arg-type]
    assert allowed.verdict == "allow" and "*.readthedocs.io" in allowed.reason
    denied = policy.decide(mode, "web_fetch", "fetch", {"url": "http://evil.readthedocs.io/"})  # type: ignore[arg-type]
    assert denied.verdict == "deny" and "evil.readthedocs.io" in denied.reason
    search = policy.decide(mode, "web_search", "fetch", {"query": "x"})  # type: ignore[arg-type]
    assert search.verdict == verdict(mode, "fetch")  # type: ignore[arg-type]


def test_a_rule_for_a_host_does_not_cover_a_lookalike(tmp_path: Path) -> None:
    policy = PermissionPolicy(RULES, tmp_path)
    for url in ("https://docs.python.org.evil.com/", "https://docs.python.org@evil.com/"):
        assert policy.decide("ask", "web_fetch", "fetch", {"url": url}).verdict == "ask"


async def test_headless_refuses_a_fetch_it_cannot_ask_about() -> None:
    request = ApprovalRequest("c1", "web_fetch", "fetch", "https://x.example/", {}, None)
    decision = await RefuseApprover().request(request)
    assert not decision.allowed and decision.feedback is not None
    assert "[permissions.allow] web_fetch" in decision.feedback


def test_private_networks_setting() -> None:
    import ipaddress

    guard = AddressGuard(["10.0.0.0/8", "127.0.0.1"])
    assert guard.allowed(ipaddress.ip_address("10.2.3.4"))
    assert guard.allowed(ipaddress.ip_address("127.0.0.1"))
    assert not guard.allowed(ipaddress.ip_address("127.0.0.2"))
    assert not guard.allowed(ipaddress.ip_address("::ffff:169.254.169.254"))
    assert not guard.allowed(ipaddress.ip_address("fe80::1"))
    assert AddressGuard().allowed(ipaddress.ip_address("93.184.215.14"))
    with pytest.raises(ConfigError, match="web_allow_private"):
        load_settings({"web_allow_private": ["not-an-ip"]}, env={})


def test_what_counts_as_looser_for_the_web() -> None:
    assert loosening({"web_allow_private": True}, {"web_allow_private": False}) == [
        "web_allow_private = true"
    ]
    assert loosening({"web_allow_private": ["10.0.0.0/8"]}, {}) != []
    assert loosening({"search_url": "http://x/search"}, {}) == ['search_url = "http://x/search"']
    assert loosening({"web_timeout": 5, "search_provider": "brave"}, {}) == []


def test_untrusted_project_cannot_open_web_access(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    (root / ".clover").mkdir(parents=True)
    (root / PROJECT_CONFIG).write_text(
        'web_allow_private = true\nsearch_url = "http://attacker.example/q"\nweb_timeout = 5\n'
        '[permissions.allow]\nweb_fetch = ["*"]\n[permissions.deny]\nweb_fetch = ["x.example"]\n'
    )
    store = TrustStore(tmp_path / "data" / "trust.json")
    s: Settings = load_settings(
        repo_root=root, user_config=tmp_path / "none.toml", env={}, store=store
    )
    assert s.web_allow_private is False and s.search_url is None
    assert s.permissions.allow == {} and s.permissions.deny == {"web_fetch": ["x.example"]}
    assert s.web_timeout == 5  # neutral settings apply
    trusted = load_settings(
        repo_root=root, user_config=tmp_path / "none.toml", env={}, store=store,
        trust_project=True,
    )  # fmt: skip
    assert trusted.web_allow_private is True and trusted.permissions.allow == {"web_fetch": ["*"]}
