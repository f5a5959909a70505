"""The [models] table: short names for a server's models, each with its own window,
images and tool-call reading."""

from __future__ import annotations

from pathlib import Path

import pytest

from clover_code.config.load import load_settings
from clover_code.config.models import resolve_model
from clover_code.config.trust import PROJECT_CONFIG, TrustStore
from clover_code.errors import ConfigError

TABLE = """\
model = "fast"
context_window = 32768
raw_parsing = "auto"

[models.fast]
id = "qwen3-coder-30b"
context_window = 65536
raw_parsing = "always"

[models."gpt-4o"]
vision = true
"""


def _settings(tmp_path: Path, text: str, **flags: object):  # type: ignore[no-untyped-def]
    config = tmp_path / "config.toml"
    config.write_text(text)
    return load_settings(flags, user_config=config, env={})


def test_a_name_resolves_to_its_id_and_an_id_to_its_entry(tmp_path: Path) -> None:
    settings = _settings(tmp_path, TABLE)
    fast = resolve_model(settings.models, "fast")
    assert (fast.name, fast.id, fast.entry is not None) == ("fast", "qwen3-coder-30b", True)
    by_id = resolve_model(settings.models, "qwen3-coder-30b")
    assert (by_id.name, by_id.id) == ("fast", "qwen3-coder-30b")
    own = resolve_model(settings.models, "gpt-4o")  # a key that is itself an id
    assert (own.id, own.entry and own.entry.vision) == ("gpt-4o", True)
    plain = resolve_model(settings.models, "other")
    assert (plain.name, plain.id, plain.entry) == ("other", "other", None)


def test_for_model_takes_the_entry_then_the_server_then_the_setting(tmp_path: Path) -> None:
    settings = _settings(tmp_path, TABLE)
    fast = settings.for_model("fast", served_window=4096)
    assert (fast.model, fast.context_window, fast.raw_parsing) == (
        "qwen3-coder-30b",
        65_536,
        "always",
    )
    reported = settings.for_model("gpt-4o", served_window=128_000)
    assert (reported.model, reported.context_window, reported.raw_parsing) == (
        "gpt-4o",
        128_000,
        "auto",
    )
    assert settings.for_model("other").context_window == 32_768
    assert settings.model == "fast"  # the settings themselves are not changed


def test_a_bad_entry_is_one_sentence_naming_the_key(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"models\.fast\.visoin"):
        _settings(tmp_path, "[models.fast]\nvisoin = true\n")
    with pytest.raises(ConfigError, match=r"models\.fast\.context_window"):
        _settings(tmp_path, "[models.fast]\ncontext_window = 10\n")


def test_a_project_may_name_models_without_being_trusted(tmp_path: Path) -> None:
    # It names models of the server the user configured, never another server.
    root = tmp_path / "repo"
    (root / ".clover").mkdir(parents=True)
    (root / PROJECT_CONFIG).write_text('[models.fast]\nid = "qwen3-coder-30b"\nvision = false\n')
    settings = load_settings(
        {},
        repo_root=root,
        user_config=tmp_path / "none.toml",
        env={},
        store=TrustStore(tmp_path / "data" / "trust.json"),
    )
    assert settings.models["fast"].id == "qwen3-coder-30b"
    assert settings.project_trust is not None and settings.project_trust.untrusted() == []
