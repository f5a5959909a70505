"""Loading the settings: one ``Settings`` filled from four layers.

Precedence, highest first: command-line flags > environment ``CLOVER_*`` >
``.clover/config.toml`` in the repository > the user config file
(``config.toml`` in the platform's user config dir, e.g.
``~/.config/clover-code/config.toml``). A higher layer's table is merged
into a lower one's key by key; any other value replaces. An unknown key or a
bad value is one ``ConfigError`` naming the file (or variable, or flag) and
the key.

Settings in the project's files that loosen safety apply only once the user
trusted that exact file content (see ``clover_code.config.trust``); the rest of the
project file always applies.

Above all four sit the administrator's managed settings files
(``clover_code.config.managed``): read first, their fixed values win, and a
value from any source that they forbid is refused with one sentence naming
the managed file.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import ValidationError

from clover_code.config import trust
from clover_code.config.managed import ManagedPolicy
from clover_code.config.managed_check import SameSetting, checked_policy, fixed_layers
from clover_code.config.managed_values import Source
from clover_code.config.project_files import ProjectJudge
from clover_code.config.settings import Settings, trust_store, user_config_path
from clover_code.config.sources import ENV_PREFIX, env_value, explain, layered, read_toml
from clover_code.errors import ConfigError
from clover_code.redact import remember

__all__ = ["load_settings", "refuse_flags"]

REPO_CONFIG = Path(trust.PROJECT_CONFIG)


def load_settings(
    cli: Mapping[str, Any] | None = None,
    *,
    repo_root: Path | None = None,
    user_config: Path | None = None,
    env: Mapping[str, str] | None = None,
    trust_project: bool = False,
    store: trust.TrustStore | None = None,
    given_as: Literal["flag", "option"] = "flag",
) -> Settings:
    """Build the settings from flags, environment, repo config and user config.

    ``trust_project`` (``--trust-project``) records that the user trusts the
    project files as they are now; ``store`` replaces the user's trust store;
    ``given_as``: ``cli`` holds a program's options (the SDK's keyword arguments),
    not command-line flags, and the sentences name them so.
    """
    cli_values = {k: v for k, v in (cli or {}).items() if v is not None}
    environ = os.environ if env is None else env
    fields = Settings.model_fields
    env_values = {
        k[len(ENV_PREFIX) :].lower(): env_value(v)
        for k, v in environ.items()
        if k.startswith(ENV_PREFIX) and k[len(ENV_PREFIX) :].lower() in fields
    }
    # The administrator's files come first: every other source is checked against them.
    policy = checked_policy(environ, Settings)
    same = SameSetting(Settings)
    policy.refuse_values(cli_values, Source(given_as), same)
    policy.refuse_values(env_values, Source("environment"), same)
    cli_values = {k: v for k, v in cli_values.items() if k not in policy.fixed}
    layers = [*fixed_layers(policy), ("environment", env_values)]
    user_path = user_config if user_config is not None else user_config_path()
    user_values = read_toml(user_path) if user_path.is_file() else {}
    report: trust.TrustReport | None = None
    if repo_root is not None:
        judge = ProjectJudge(repo_root, store or trust_store(), record=trust_project)
        defaults = {name: f.default for name, f in Settings.model_fields.items()}
        project, report = judge.read(
            defaults,
            user_values,
            env_values,
            ENV_PREFIX,
            # What the file asks for, trusted or not, before trust drops anything.
            check=lambda data, path: policy.refuse_values(data, Source("file", path), same),
        )
        if project is not None and "hooks" in project:
            project = {
                **project,
                "hooks": _joined_hooks(user_values.get("hooks"), project["hooks"]),
            }
        if project is not None:
            layers.append((f"config file {repo_root / REPO_CONFIG}", project))
    if user_path.is_file():
        policy.refuse_values(user_values, Source("file", user_path), same)
        layers.append((f"config file {user_path}", user_values))
    try:
        settings = Settings(**layered([cli_values, *(data for _, data in layers)]))
        settings._project_trust = report
        settings._managed = policy
        # No source named a sandbox (each was checked): the default itself may be forbidden.
        clause = policy.sandbox_clause(settings.sandbox)
        if clause is not None:
            raise ConfigError(
                f'the default sandbox "{settings.sandbox}" is refused because {clause}; '
                "choose an allowed one with --sandbox or sandbox in your config."
            )
        # Whatever a message later says, these never appear in it (clover_code.redact).
        remember(
            *(
                key.get_secret_value()
                for key in (settings.api_key, settings.search_api_key)
                if key is not None
            )
        )
        return settings
    except ValidationError as exc:
        known = list(Settings.model_fields)
        raise ConfigError(explain(exc, cli_values, layers, known, given_as)) from None


def refuse_flags(flags: Mapping[str, Any], env: Mapping[str, str] | None = None) -> ManagedPolicy:
    """The managed policy, once none of ``flags`` (settings given on the command line)
    is one it forbids: the check of a command that loads no settings when it starts."""
    policy = checked_policy(os.environ if env is None else env, Settings)
    given = {k: v for k, v in flags.items() if v is not None}
    policy.refuse_values(given, Source("flag"), SameSetting(Settings))
    return policy


def _joined_hooks(user: Any, project: Any) -> Any:
    """A trusted project's hooks run after the user's, never instead of them (the
    layers would otherwise replace the user's list for an event)."""
    if not isinstance(user, dict) or not isinstance(project, dict):
        return project
    joined = dict(user)
    for event, hooks in project.items():
        mine = user.get(event)
        joined[event] = (
            mine + hooks if isinstance(mine, list) and isinstance(hooks, list) else hooks
        )
    return joined
