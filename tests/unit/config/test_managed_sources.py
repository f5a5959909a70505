"""Each setting a managed file pins, against each source that tries to loosen it.

The managed file is added with ``CLOVER_MANAGED_SETTINGS`` (the system file,
``/etc/clover-code/managed.toml``, is absent here and is read the same way;
``tests/integration/test_managed_system_file.py`` puts one there in a mount
namespace). Every refusal is one sentence naming the setting and the file.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from clover_code.config.load import load_settings
from clover_code.config.settings import Settings
from clover_code.config.trust import TrustStore
from clover_code.errors import ConfigError, ExitCode


@dataclass(frozen=True)
class Pinned:
    """One pinned setting: the managed text, and how each source asks for more."""

    managed: str
    key: str
    flag: Any
    """The value as a flag (or an MCP call's argument) gives it; None: no such flag."""
    env: str
    toml: str
    clause: str
    """What the refusal names as set by the administrator."""
    allowed: tuple[Any, str, str] | None = None
    """An allowed value as flag, variable and TOML, to show the check is not blanket."""


PINNED = {
    "max_approval": Pinned(
        '[limits]\nmax_approval = "ask"\n',
        "approval",
        "full-auto",
        "full-auto",
        'approval = "full-auto"\n',
        'max_approval = "ask"',
        ("plan", "read-only", 'approval = "ask"\n'),
    ),
    "forbidden_sandboxes": Pinned(
        '[limits]\nforbidden_sandboxes = ["none"]\n',
        "sandbox",
        "none",
        "none",
        'sandbox = "none"\n',
        'forbidden_sandboxes = ["none"]',
        ("bwrap", "docker", 'sandbox = "bwrap"\n'),
    ),
    "allowed_base_urls": Pinned(
        '[limits]\nallowed_base_urls = ["https://llm.example.com/v1"]\n',
        "base_url",
        "https://llm.example.com.evil.test/v1",
        "http://llm.example.com/v1",
        'base_url = "https://llm.example.com/v2"\n',
        'allowed_base_urls = ["https://llm.example.com/v1"]',
        (
            "https://llm.example.com/v1",
            "https://LLM.example.com:443/v1/",
            'base_url = "https://llm.example.com/v1"\n',
        ),
    ),
    "allowed_mcp_servers": Pinned(
        '[limits]\nallowed_mcp_servers = ["docs", { command = ["uvx", "lint-mcp"] }]\n',
        "mcp_servers",
        {"lint": {"command": "uvx", "args": ["other-mcp"]}},
        '{"evil": {"command": "evil-mcp"}}',
        '[mcp_servers.evil]\ncommand = "evil-mcp"\n',
        'allowed_mcp_servers = ["docs", { command = ["uvx", "lint-mcp"] }]',
        (
            {"lint": {"command": "uvx", "args": ["lint-mcp"]}},
            '{"docs": {"command": "docs-mcp"}}',
            '[mcp_servers.docs]\ncommand = "docs-mcp"\n',
        ),
    ),
    "disabled mcp": Pinned(
        '[limits]\ndisabled = ["mcp"]\n',
        "mcp_servers",
        {"docs": {"command": "docs-mcp"}},
        '{"docs": {"command": "docs-mcp"}}',
        '[mcp_servers.docs]\ncommand = "docs-mcp"\n',
        'disabled = ["mcp"]',
    ),
    "disabled hooks": Pinned(
        '[limits]\ndisabled = ["hooks"]\n',
        "hooks",
        {"Stop": [{"command": "./audit"}]},
        '{"Stop": [{"command": "./audit"}]}',
        '[[hooks.Stop]]\ncommand = "./audit"\n',
        'disabled = ["hooks"]',
    ),
    "disabled web_search": Pinned(
        '[limits]\ndisabled = ["web_search", "web_fetch"]\n',
        "search_url",
        "http://localhost:8888/search",
        "http://localhost:8888/search",
        'search_url = "http://localhost:8888/search"\n',
        'disabled = ["web_search", "web_fetch"]',
    ),
    "fixed max_turns": Pinned(
        "max_turns = 20\n",
        "max_turns",
        30,
        "30",
        "max_turns = 30\n",
        "max_turns = 20",
        (20, "20", "max_turns = 20\n"),
    ),
    "fixed sandbox_network": Pinned(
        "sandbox_network = false\n",
        "sandbox_network",
        True,
        "true",
        "sandbox_network = true\n",
        "sandbox_network = false",
        (False, "0", "sandbox_network = false\n"),
    ),
    "fixed trust_project_settings": Pinned(
        "trust_project_settings = false\n",
        "trust_project_settings",
        True,
        "1",
        "trust_project_settings = true\n",
        "trust_project_settings = false",
    ),
}

SOURCES = ("flag", "environment", "project", "trusted project", "user")


@dataclass
class Place:
    """A workspace, a user config and a trust store, with one managed file."""

    root: Path
    user: Path
    store: TrustStore
    managed: Path

    def load(
        self,
        source: str,
        pinned: Pinned,
        value: tuple[Any, str, str],
    ) -> Settings:
        flag, env_value, toml = value
        cli: dict[str, Any] = {}
        env = {"CLOVER_MANAGED_SETTINGS": str(self.managed)}
        if source == "flag":
            cli[pinned.key] = flag
        elif source == "environment":
            env[f"CLOVER_{pinned.key.upper()}"] = env_value
        elif source in ("project", "trusted project"):
            (self.root / ".clover/config.toml").write_text(toml)
        else:
            self.user.write_text(toml)
        return load_settings(
            cli,
            repo_root=self.root,
            user_config=self.user,
            env=env,
            trust_project=source == "trusted project",
            store=self.store,
        )


@pytest.fixture
def place(tmp_path: Path) -> Place:
    root = tmp_path / "repo"
    (root / ".clover").mkdir(parents=True)
    return Place(root, tmp_path / "user.toml", TrustStore(tmp_path / "trust.json"), tmp_path / "m")


CASES = [
    pytest.param(name, source, id=f"{name}-{source}")
    for name in PINNED
    for source in SOURCES
    if not (source == "flag" and PINNED[name].flag is None)
]


@pytest.mark.parametrize(("name", "source"), CASES)
def test_a_source_that_loosens_a_pinned_setting_is_refused_naming_the_file(
    place: Place, name: str, source: str
) -> None:
    pinned = PINNED[name]
    place.managed.write_text(pinned.managed)
    with pytest.raises(ConfigError) as refused:
        place.load(source, pinned, (pinned.flag, pinned.env, pinned.toml))
    sentence = str(refused.value)
    assert sentence.endswith(
        f"is refused because {pinned.clause} is set by your administrator in {place.managed}."
    )
    assert sentence.count(". ") == 0  # one sentence
    assert refused.value.exit_code == ExitCode.USAGE
    if source in ("project", "trusted project"):
        assert str(place.root / ".clover/config.toml") in sentence
    elif source == "user":
        assert str(place.user) in sentence


ALLOWED = [
    pytest.param(name, source, id=f"{name}-{source}")
    for name, pinned in PINNED.items()
    if pinned.allowed is not None
    for source in SOURCES
]


@pytest.mark.parametrize(("name", "source"), ALLOWED)
def test_a_value_the_managed_file_allows_still_applies(
    place: Place, name: str, source: str
) -> None:
    pinned = PINNED[name]
    assert pinned.allowed is not None
    place.managed.write_text(pinned.managed)
    settings = place.load(source, pinned, pinned.allowed)
    assert settings.managed.files == (place.managed,)


def test_a_pinned_value_is_the_value_whatever_no_source_says(place: Place) -> None:
    place.managed.write_text('max_turns = 20\napproval = "plan"\nsandbox = "bwrap"\n')
    env = {"CLOVER_MANAGED_SETTINGS": str(place.managed)}
    settings = load_settings({}, repo_root=place.root, user_config=place.user, env=env)
    assert (settings.max_turns, settings.approval, settings.sandbox) == (20, "plan", "bwrap")
    # The same value from another source is no conflict.
    settings = load_settings(
        {"approval": "plan"}, user_config=place.user, env={**env, "CLOVER_MAX_TURNS": "20"}
    )
    assert settings.max_turns == 20


@pytest.mark.parametrize(
    ("variable", "value"),
    [
        ("OTEL_TRACES_EXPORTER", "none"),
        ("OTEL_METRICS_EXPORTER", "console"),
        ("OTEL_SDK_DISABLED", "true"),
        ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:9/elsewhere"),
        ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://127.0.0.1:9/v1/traces"),
        ("OTEL_TRACES_SAMPLER", "always_off"),
    ],
)
def test_forced_telemetry_cannot_be_turned_off_or_sent_elsewhere(
    place: Place, variable: str, value: str
) -> None:
    place.managed.write_text('[limits]\ntelemetry = { endpoint = "https://otel.example.com" }\n')
    env = {"CLOVER_MANAGED_SETTINGS": str(place.managed)}
    assert load_settings({}, user_config=place.user, env=env).managed.forced_telemetry
    # The same collector, named again, is fine.
    same = {**env, "OTEL_EXPORTER_OTLP_ENDPOINT": "https://otel.example.com/"}
    load_settings({}, user_config=place.user, env=same)
    with pytest.raises(ConfigError) as refused:
        load_settings({}, user_config=place.user, env={**env, variable: value})
    assert str(refused.value) == (
        f"{variable}={value} is refused because telemetry export to https://otel.example.com "
        f"is set by your administrator in {place.managed}."
    )


def test_a_forbidden_default_sandbox_is_refused_and_an_allowed_choice_is_not(
    place: Place,
) -> None:
    place.managed.write_text('[limits]\nforbidden_sandboxes = ["auto", "none"]\n')
    env = {"CLOVER_MANAGED_SETTINGS": str(place.managed)}
    with pytest.raises(ConfigError, match=r'^the default sandbox "auto" is refused because'):
        load_settings({}, user_config=place.user, env=env)
    assert load_settings({"sandbox": "docker"}, user_config=place.user, env=env).sandbox == "docker"


def test_an_untrusted_project_that_asks_for_a_forbidden_value_is_refused_not_ignored(
    place: Place,
) -> None:
    """Without a managed file, trust ignores the value; with one, it is refused outright."""
    (place.root / ".clover/config.toml").write_text('approval = "full-auto"\n')
    kept = load_settings({}, repo_root=place.root, user_config=place.user, env={})
    assert kept.approval is None and kept.project_trust is not None
    place.managed.write_text('[limits]\nmax_approval = "auto-edit"\n')
    env = {"CLOVER_MANAGED_SETTINGS": str(place.managed)}
    with pytest.raises(ConfigError, match="max_approval"):
        load_settings({}, repo_root=place.root, user_config=place.user, env=env)
