"""Settings: one pydantic-settings model, filled from four layers.

Precedence, highest first: command-line flags > environment ``CLOVER_*`` >
``.clover/config.toml`` in the repository > the user config file
(``config.toml`` in the platform's user config dir, e.g.
``~/.config/clover-code/config.toml``). An unknown key or a bad value is one
``ConfigError`` naming the file (or variable, or flag) and the key.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from contextvars import ContextVar
from pathlib import Path
from typing import Any, Literal

import platformdirs
from pydantic import Field, SecretStr, ValidationError
from pydantic.fields import FieldInfo
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

from clover_code.errors import ConfigError

APP_NAME = "clover-code"
REPO_CONFIG = Path(".clover") / "config.toml"
ENV_PREFIX = "CLOVER_"

EngineKind = Literal["auto", "remote", "sglang", "hf"]
SandboxKind = Literal["auto", "docker", "bwrap", "none"]
ApprovalMode = Literal["read-only", "ask", "auto-edit", "full-auto"]


def user_config_path() -> Path:
    """Where the user config file lives on this platform."""
    return Path(platformdirs.user_config_dir(APP_NAME)) / "config.toml"


def user_data_dir() -> Path:
    """Where sessions and other user data live on this platform."""
    return Path(platformdirs.user_data_dir(APP_NAME))


class Settings(BaseSettings):
    """Everything clover-code can be told. Each field is documented below."""

    model_config = SettingsConfigDict(
        env_prefix=ENV_PREFIX,
        extra="forbid",
        use_attribute_docstrings=True,
        validate_default=True,
    )

    engine: EngineKind = "auto"
    """Which engine runs the model: auto, remote, sglang or hf.

    auto means remote when a base URL is set, else SGLang on a local GPU."""

    base_url: str | None = None
    """URL of an OpenAI-compatible server, e.g. http://localhost:30000/v1."""

    model: str | None = None
    """Model name to request; unset means the first model the server lists."""

    api_key: SecretStr | None = None
    """API key sent as a bearer token to the remote server."""

    model_path: str | None = None
    """Local checkpoint directory for the sglang and hf engines."""

    block_size: int = Field(32, ge=1, le=4096)
    """Tokens per diffusion block; token-by-token servers are grouped into blocks of this size."""

    raw_parsing: Literal["auto", "always", "never"] = "auto"
    """Client-side parsing of Qwen3 reasoning and tool-call text: auto, always or never.

    always: the server sends raw text; auto: native fields when present, and
    tool-call XML or explicit think tags found in the text are parsed too."""

    thinking: bool = True
    """Let the model think before answering (Qwen3 enable_thinking)."""

    max_tokens: int | None = Field(None, ge=1)
    """Cap on tokens per model response; unset lets the server decide."""

    temperature: float | None = Field(None, ge=0.0, le=2.0)
    """Sampling temperature for autoregressive servers (dLLM servers ignore it)."""

    context_window: int = Field(131_072, ge=1024)
    """Tokens shared by prompt and response."""

    sandbox: SandboxKind = "auto"
    """Where shell commands run: auto, docker, bwrap, or none (the host, only when chosen)."""

    approval: ApprovalMode | None = None
    """read-only, ask, auto-edit or full-auto; unset means ask in the app and auto-edit headless."""

    max_turns: int = Field(50, ge=1)
    """Most model requests the agent makes for one task."""

    timeout: float | None = Field(None, gt=0)
    """Wall-clock limit for one task, in seconds."""

    shell_timeout: float = Field(120.0, gt=0)
    """Longest a single shell command may run, in seconds."""

    output_limit: int = Field(30_000, ge=1000)
    """Characters of tool output the model sees before head + tail truncation."""

    tool_retries: int = Field(3, ge=0)
    """Malformed tool calls in a row the model may make before the turn fails."""

    max_retries: int = Field(4, ge=0)
    """Retries of a model request that failed before any output arrived."""

    request_timeout: float = Field(300.0, gt=0)
    """Seconds to wait for the next bytes of a model response."""

    sessions_dir: Path | None = None
    """Where session transcripts are written; unset means the user data dir."""

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        layers = _LAYERS.get()
        return (init_settings, *(_DictSource(settings_cls, data) for _, data in layers))

    def resolved_sessions_dir(self) -> Path:
        """The directory transcripts go to."""
        return self.sessions_dir or user_data_dir() / "sessions"


class _DictSource(PydanticBaseSettingsSource):
    """One already-read layer (environment or a config file) as a settings source."""

    def __init__(self, settings_cls: type[BaseSettings], data: dict[str, Any]):
        super().__init__(settings_cls)
        self.data = data

    def get_field_value(self, field: FieldInfo, field_name: str) -> tuple[Any, str, bool]:
        return self.data.get(field_name), field_name, False

    def __call__(self) -> dict[str, Any]:
        return dict(self.data)


# The layers below the flags, highest first, for the load in progress: pydantic
# builds the sources itself, so they are handed over through a context variable.
_LAYERS: ContextVar[tuple[tuple[str, dict[str, Any]], ...]] = ContextVar("_LAYERS", default=())


def read_toml(path: Path) -> dict[str, Any]:
    """Parse one config file, turning syntax errors into a ``ConfigError``."""
    try:
        with path.open("rb") as fh:
            data = tomllib.load(fh)
    except tomllib.TOMLDecodeError as exc:
        msg = f"config file {path} is not valid TOML ({exc}); fix or remove it."
        raise ConfigError(msg) from None
    except OSError as exc:
        raise ConfigError(f"config file {path} cannot be read ({exc.strerror}).") from None
    return data


def load_settings(
    cli: Mapping[str, Any] | None = None,
    *,
    repo_root: Path | None = None,
    user_config: Path | None = None,
    env: Mapping[str, str] | None = None,
) -> Settings:
    """Build the settings from flags, environment, repo config and user config."""
    cli_values = {k: v for k, v in (cli or {}).items() if v is not None}
    environ = os.environ if env is None else env
    fields = Settings.model_fields
    env_values = {
        k[len(ENV_PREFIX) :].lower(): v
        for k, v in environ.items()
        if k.startswith(ENV_PREFIX) and k[len(ENV_PREFIX) :].lower() in fields
    }
    layers: list[tuple[str, dict[str, Any]]] = [("environment", env_values)]
    if repo_root is not None and (repo_root / REPO_CONFIG).is_file():
        path = repo_root / REPO_CONFIG
        layers.append((f"config file {path}", read_toml(path)))
    user_path = user_config if user_config is not None else user_config_path()
    if user_path.is_file():
        layers.append((f"config file {user_path}", read_toml(user_path)))
    token = _LAYERS.set(tuple(layers))
    try:
        return Settings(**cli_values)
    except ValidationError as exc:
        raise ConfigError(_explain(exc, cli_values, layers)) from None
    finally:
        _LAYERS.reset(token)


def _explain(
    exc: ValidationError, cli: Mapping[str, Any], layers: list[tuple[str, dict[str, Any]]]
) -> str:
    """One sentence per bad key, naming where the value came from."""
    lines = []
    for err in exc.errors():
        key = str(err["loc"][0]) if err["loc"] else "?"
        if key in cli:
            where = f"command-line option --{key.replace('_', '-')}"
        else:
            where = next((name for name, data in layers if key in data), "settings")
            if where == "environment":
                where = f"environment variable {ENV_PREFIX}{key.upper()}"
        if err["type"] == "extra_forbidden":
            known = ", ".join(sorted(Settings.model_fields))
            lines.append(f"{where}: unknown key '{key}' (known keys: {known}).")
        else:
            got = err.get("input")
            lines.append(f"{where}: bad value {got!r} for '{key}': {err['msg']}.")
    return " ".join(lines)
