from __future__ import annotations

from pathlib import Path

import pytest

from clover_code.config.field_docs import field_docs
from clover_code.config.load import load_settings
from clover_code.config.settings import Settings
from clover_code.errors import ConfigError


@pytest.fixture
def layers(tmp_path: Path) -> tuple[Path, Path]:
    repo = tmp_path / "repo"
    (repo / ".clover").mkdir(parents=True)
    user = tmp_path / "user.toml"
    return repo, user


def test_precedence_cli_env_repo_user(layers: tuple[Path, Path]) -> None:
    repo, user = layers
    user.write_text('model = "user"\nblock_size = 4\nmax_turns = 7\nsandbox = "none"\n')
    (repo / ".clover/config.toml").write_text('model = "repo"\nblock_size = 16\nmax_turns = 9\n')
    env = {"CLOVER_MODEL": "env", "CLOVER_BLOCK_SIZE": "8", "UNRELATED": "1"}
    s = load_settings({"model": "cli"}, repo_root=repo, user_config=user, env=env)
    assert (s.model, s.block_size, s.max_turns, s.sandbox) == ("cli", 8, 9, "none")


def test_tables_merge_key_by_key_across_layers(layers: tuple[Path, Path]) -> None:
    repo, user = layers
    user.write_text(
        '[permissions.allow]\nshell = ["pytest *"]\n[mcp_servers.docs]\ncommand = "docs-server"\n'
    )
    env = {
        "CLOVER_PERMISSIONS": '{"deny": {"shell": ["git push *"]}}',
        "CLOVER_MCP_SERVERS": '{"web": {"url": "http://localhost:9/mcp"}}',
    }
    s = load_settings({}, repo_root=repo, user_config=user, env=env)
    # A higher layer adds to a table; it does not replace the lower layer's.
    assert s.permissions.allow == {"shell": ["pytest *"]}
    assert s.permissions.deny == {"shell": ["git push *"]}
    assert sorted(s.mcp_servers) == ["docs", "web"]
    # Where both give the same key, the higher layer's value wins.
    env["CLOVER_PERMISSIONS"] = '{"allow": {"shell": ["ls"]}}'
    s = load_settings({}, repo_root=repo, user_config=user, env=env)
    assert s.permissions.allow == {"shell": ["ls"]}


def test_defaults_and_secret(tmp_path: Path) -> None:
    s = load_settings({}, user_config=tmp_path / "none.toml", env={"CLOVER_API_KEY": "sk-1"})
    assert s.block_size == 32 and s.context_window == 131_072 and s.engine == "auto"
    assert s.api_key is not None and s.api_key.get_secret_value() == "sk-1"
    assert "sk-1" not in repr(s)


def test_every_field_is_documented() -> None:
    docs = field_docs(Settings)
    for name in Settings.model_fields:
        assert docs.get(name), f"{name} has no docstring"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("blok_size = 3\n", "unknown key 'blok_size'"),
        ('block_size = "big"\n', "bad value 'big' for 'block_size'"),
        ("block_size = 0\n", "for 'block_size'"),
        ('approval = "yolo"\n', "for 'approval'"),
        ("block_size = \n", "is not valid TOML"),
    ],
)
def test_bad_repo_config_names_file_and_key(
    layers: tuple[Path, Path], text: str, message: str
) -> None:
    repo, user = layers
    (repo / ".clover/config.toml").write_text(text)
    with pytest.raises(ConfigError) as info:
        load_settings({}, repo_root=repo, user_config=user, env={})
    assert message in str(info.value)
    assert str(repo / ".clover/config.toml") in str(info.value)


def test_bad_env_and_cli_values_are_named(layers: tuple[Path, Path]) -> None:
    repo, user = layers
    with pytest.raises(ConfigError, match="environment variable CLOVER_SANDBOX"):
        load_settings({}, repo_root=repo, user_config=user, env={"CLOVER_SANDBOX": "vm"})
    with pytest.raises(ConfigError, match="command-line option --max-turns"):
        load_settings({"max_turns": 0}, repo_root=repo, user_config=user, env={})


def test_user_file_error_names_user_file(layers: tuple[Path, Path]) -> None:
    repo, user = layers
    user.write_text("colour = 1\n")
    with pytest.raises(ConfigError, match=f"config file {user}: unknown key 'colour'"):
        load_settings({}, repo_root=repo, user_config=user, env={})


def test_structured_values_from_the_environment(tmp_path: Path) -> None:
    env = {"CLOVER_PERMISSIONS": '{"deny": {"shell": ["rm *"]}}'}
    s = load_settings({}, user_config=tmp_path / "none.toml", env=env)
    assert s.permissions.deny == {"shell": ["rm *"]}
