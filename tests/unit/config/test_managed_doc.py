"""docs/managed-settings.md: its copyable example is a managed file clover-code accepts
and enforces as the page says."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from clover_code.config.load import load_settings
from clover_code.config.managed_files import read_policy
from clover_code.config.settings import Settings
from clover_code.errors import ConfigError
from tests.paths import ROOT

PAGE = ROOT / "docs" / "managed-settings.md"


def example() -> str:
    found = re.search(r"<!-- managed-example -->\n```toml\n(.*?)```", PAGE.read_text("utf-8"), re.S)
    assert found, "the page has no marked example"
    return found.group(1)


def test_the_example_is_a_managed_file_that_loads(tmp_path: Path) -> None:
    pytest.importorskip("opentelemetry.sdk")  # the example forces telemetry export
    managed = tmp_path / "managed.toml"
    managed.write_text(example())
    policy = read_policy([managed], list(Settings.model_fields))
    assert policy.approval_modes()[-1] == "sandbox-auto"
    env = {"CLOVER_MANAGED_SETTINGS": str(managed)}
    settings = load_settings({}, user_config=tmp_path / "u", env=env)
    assert settings.base_url == "https://llm.example.com/v1" and settings.max_turns == 100
    assert settings.managed.mcp_server_clause("lint", ("uvx", "lint-mcp"), None) is None
    assert settings.managed.mcp_server_clause("lint", ("uvx", "other"), None) is not None
    with pytest.raises(ConfigError, match=r"^--approval full-auto is refused because"):
        load_settings({"approval": "full-auto"}, user_config=tmp_path / "u", env=env)


def test_the_page_names_every_feature_and_limit() -> None:
    from clover_code.config.managed import FEATURES, LIMIT_KEYS

    text = PAGE.read_text("utf-8")
    for name in (*FEATURES, *LIMIT_KEYS):
        assert f"`{name}`" in text, f"docs/managed-settings.md does not explain {name}"
