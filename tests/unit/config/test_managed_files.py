"""Reading managed settings files: the stricter of two wins, and a mistake is never silent."""

from __future__ import annotations

from pathlib import Path

import pytest

from clover_code.config.load import load_settings
from clover_code.config.managed_files import managed_paths, read_policy
from clover_code.config.settings import Settings
from clover_code.errors import ConfigError

KNOWN = list(Settings.model_fields)

SYSTEM = """\
max_turns = 20
model = "system-model"
[limits]
max_approval = "auto-edit"
forbidden_sandboxes = ["none"]
allowed_base_urls = ["https://a.example.com/v1", "https://b.example.com/v1"]
allowed_mcp_servers = ["docs", "lint"]
disabled = ["web_fetch"]
telemetry = { endpoint = "https://otel.example.com" }
"""

EXTRA = """\
model = "extra-model"
timeout = 600
[limits]
max_approval = "full-auto"
forbidden_sandboxes = ["docker"]
allowed_base_urls = ["https://b.example.com/v1", "https://c.example.com/v1"]
allowed_mcp_servers = ["lint", "other"]
disabled = ["plugins"]
telemetry = { endpoint = "https://elsewhere.example.com" }
"""


def write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def test_two_files_merge_into_the_stricter_policy(tmp_path: Path) -> None:
    system = write(tmp_path / "system.toml", SYSTEM)
    extra = write(tmp_path / "extra.toml", EXTRA)
    policy = read_policy([system, extra], KNOWN)
    assert policy.files == (system, extra)
    # The lower ceiling, whichever file has it.
    assert policy.max_approval is not None and policy.max_approval.value == "auto-edit"
    swapped = read_policy([extra, system], KNOWN).max_approval
    assert swapped is not None and swapped.value == "auto-edit"
    # Every forbidden sandbox and disabled feature of either file.
    assert policy.forbidden_kinds() == {"none", "docker"}
    assert policy.disables("web_fetch") and policy.disables("plugins")
    assert not policy.disables("mcp")
    # A URL or server must pass both lists: their intersection.
    urls = [f"https://{u}.example.com/v1" for u in ("a", "b", "c")]
    allowed = [u for u in urls if policy.base_url_clause(u) is None]
    assert allowed == ["https://b.example.com/v1"]
    assert policy.mcp_server_clause("lint", ("lint-mcp",), None) is None
    assert policy.mcp_server_clause("docs", ("docs-mcp",), None) is not None
    assert policy.mcp_server_clause("other", ("x",), None) is not None
    # Fixed values and the telemetry endpoint have no order: the system file's win.
    assert policy.fixed["model"].value == "system-model"
    assert policy.fixed["max_turns"].value == 20 and policy.fixed["timeout"].value == 600
    assert policy.forced_telemetry is not None
    assert policy.forced_telemetry.endpoint == "https://otel.example.com"


def test_a_refusal_names_the_file_whose_limit_refuses(tmp_path: Path) -> None:
    system = write(tmp_path / "system.toml", SYSTEM)
    extra = write(tmp_path / "extra.toml", EXTRA)
    policy = read_policy([system, extra], KNOWN)
    assert str(system) in (policy.base_url_clause("https://c.example.com/v1") or "")
    assert str(extra) in (policy.base_url_clause("https://a.example.com/v1") or "")
    assert str(extra) in (policy.sandbox_clause("docker") or "")
    assert str(system) in (policy.sandbox_clause("none") or "")


def test_a_second_file_named_by_the_environment_can_add_limits_but_never_remove_them(
    tmp_path: Path,
) -> None:
    """The variable is the user's: its file may be stricter, never looser."""
    system = write(tmp_path / "system.toml", '[limits]\nmax_approval = "ask"\n')
    looser = write(tmp_path / "looser.toml", '[limits]\nmax_approval = "full-auto"\n')
    stricter = write(tmp_path / "stricter.toml", '[limits]\nmax_approval = "plan"\n')
    assert read_policy([system, looser], KNOWN).approval_modes()[-1] == "ask"
    assert read_policy([system, stricter], KNOWN).approval_modes()[-1] == "plan"


def test_a_second_file_cannot_fix_a_value_the_system_files_limits_forbid(
    tmp_path: Path,
) -> None:
    """Were CLOVER_MANAGED_SETTINGS read alone, its approval would be fixed; the system
    file's ceiling still refuses it. (The system file itself is put in place in
    tests/integration/test_managed_system_file.py.)"""
    extra = write(
        tmp_path / "extra.toml", 'approval = "full-auto"\n[limits]\nmax_approval = "ask"\n'
    )
    with pytest.raises(ConfigError) as refused:
        load_settings({}, user_config=tmp_path / "u", env={"CLOVER_MANAGED_SETTINGS": str(extra)})
    assert str(refused.value) == (
        f'approval = "full-auto" in managed settings file {extra} is refused because '
        f'max_approval = "ask" is set by your administrator in {extra}.'
    )


def test_the_system_file_is_always_looked_for_and_the_variable_only_adds(
    tmp_path: Path,
) -> None:
    extra = write(tmp_path / "extra.toml", "")
    paths = managed_paths({"CLOVER_MANAGED_SETTINGS": str(extra)})
    assert paths[-1] == extra
    # /etc/clover-code/managed.toml is not on this machine; where it is, it comes first.
    assert all(p == extra for p in paths[:-1]) or paths[0] == Path("/etc/clover-code/managed.toml")
    assert managed_paths({"CLOVER_MANAGED_SETTINGS": "  "}) == paths[:-1]


@pytest.mark.parametrize(
    ("text", "says"),
    [
        (
            "[limits]\nmax_aproval = 'ask'\n",
            "unknown key 'max_aproval'; did you mean 'max_approval'?",
        ),
        ("[limits]\nmax_approval = 'yolo'\n", 'max_approval is "yolo"; use one of read-only'),
        (
            "[limits]\ndisabled = ['web-fetch']\n",
            "unknown feature 'web-fetch' (did you mean 'web_fetch')",
        ),
        ("[limits]\ndisabled = 'mcp'\n", "disabled must be a list of strings"),
        ("[limits]\nforbidden_sandboxes = ['host']\n", "unknown sandbox kind 'host'"),
        ("[limits]\nallowed_base_urls = ['llm.example.com']\n", "the URL has no scheme"),
        ("[limits]\nallowed_mcp_servers = [{ nmae = 'x' }]\n", "the unknown key 'nmae'"),
        ("[limits]\nallowed_mcp_servers = [{ command = 'uvx x' }]\n", "command that is not a list"),
        ("[limits]\ntelemetry = { headers = {} }\n", "telemetry needs an endpoint"),
        ("[limits]\ntelemetry = { endpoint = 'otel:4318' }\n", "telemetry has the endpoint"),
        ("limits = 3\n", "[limits] must be a table"),
        ("max_turn = 3\n", "unknown key 'max_turn'; did you mean 'max_turns'?"),
        ("max_turns = 0\n", "bad value 0 for 'max_turns'"),
        ('approval = "yolo"\n', "bad value 'yolo' for 'approval'"),
        ("max_turns = \n", "is not valid TOML"),
    ],
)
def test_a_mistake_in_a_managed_file_is_one_sentence_naming_it(
    tmp_path: Path, text: str, says: str
) -> None:
    managed = write(tmp_path / "managed.toml", text)
    with pytest.raises(ConfigError) as refused:
        load_settings({}, user_config=tmp_path / "u", env={"CLOVER_MANAGED_SETTINGS": str(managed)})
    assert says in str(refused.value)
    assert str(managed) in str(refused.value)


def test_a_named_file_that_is_missing_is_an_error_not_an_empty_policy(tmp_path: Path) -> None:
    missing = tmp_path / "managed.toml"
    with pytest.raises(ConfigError, match=r"CLOVER_MANAGED_SETTINGS names .* which is not a file"):
        load_settings({}, user_config=tmp_path / "u", env={"CLOVER_MANAGED_SETTINGS": str(missing)})


def test_headers_of_forced_telemetry_never_appear_in_a_message(tmp_path: Path) -> None:
    managed = write(
        tmp_path / "managed.toml",
        '[limits]\ntelemetry = { endpoint = "https://otel.example.com", '
        'headers = { authorization = "Bearer otel-secret-7731" } }\n',
    )
    env = {"CLOVER_MANAGED_SETTINGS": str(managed)}
    load_settings({}, user_config=tmp_path / "u", env=env)
    error = ConfigError("the collector said: Bearer otel-secret-7731 is wrong.")
    assert "otel-secret-7731" not in str(error)


def test_a_secret_is_named_never_shown_in_a_refusal(tmp_path: Path) -> None:
    managed = write(tmp_path / "managed.toml", 'api_key = "sk-admin-key-5521"\n')
    env = {"CLOVER_MANAGED_SETTINGS": str(managed)}
    for cli, extra in (({"api_key": "sk-user-key-9034"}, {}), ({}, {"CLOVER_API_KEY": "sk-9034"})):
        with pytest.raises(ConfigError) as refused:
            load_settings(cli, user_config=tmp_path / "u", env={**env, **extra})
        sentence = str(refused.value)
        assert sentence.endswith(
            f"is refused because api_key is set by your administrator in {managed}."
        )
        assert "5521" not in sentence and "9034" not in sentence
    # The secret settings are exactly the settings the model keeps as secrets.
    from pydantic import SecretStr

    from clover_code.config.managed_values import SECRET_SETTINGS

    secret = {
        name
        for name, f in Settings.model_fields.items()
        if SecretStr in getattr(f.annotation, "__args__", (f.annotation,))
    }
    assert secret == SECRET_SETTINGS
