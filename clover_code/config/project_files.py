"""Reading the project's config files under trust: what applies and what is ignored.

``ProjectJudge.read`` reads ``.clover/config.toml`` and ``.mcp.json`` once
(and fingerprints the sandbox image definition, which runs programs when built),
hashes the bytes it parses (so the content judged is the content used), and
drops the settings that loosen safety (``clover_code.config.loosening``) from
a file whose exact content the user has not trusted.
"""

from __future__ import annotations

import json
import os
import shlex
import tomllib
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter, ValidationError

from clover_code.config import trust
from clover_code.config.loosening import loosening, mcp_loosening, without_loosening
from clover_code.config.project_definition import IMAGE_TRUST_NOTE, trust_fingerprint
from clover_code.errors import ConfigError
from clover_code.fs.named_files import fingerprint, snapshot, workspace_files

__all__ = ["ProjectJudge"]


@dataclass(frozen=True, slots=True)
class ProjectJudge:
    """Decides which of a workspace's project settings apply."""

    root: Path
    store: trust.TrustStore
    record: bool = False
    """--trust-project: trust the files as they are now, and remember it."""

    def read(
        self,
        defaults: Mapping[str, Any],
        user_values: Mapping[str, Any],
        env_values: Mapping[str, Any],
        env_prefix: str,
        check: Callable[[Mapping[str, Any], Path], None] | None = None,
    ) -> tuple[dict[str, Any] | None, trust.TrustReport]:
        """The project config file's settings that apply (None: no file) and the report.

        "Looser" is judged against the settings without the project file: the
        user config over ``defaults``. The environment and the user config may
        hold the switch that trusts every project. ``check`` sees every setting
        the file holds, as parsed, before trust drops any (it raises to refuse).
        """
        base = {**defaults, **user_values}
        trust_all = _switch(env_values, user_values, env_prefix)
        files: list[trust.ProjectFile] = []
        data: dict[str, Any] | None = None
        config_path = self.root / trust.PROJECT_CONFIG
        raw = _read_bytes(config_path)
        if raw is not None:
            data = _parse_toml(raw, config_path)
            if check is not None:
                check(data, config_path)
            found = loosening(data, base)
            commands = list(_config_commands(data)) if found else []
            judged = self._judge(trust.PROJECT_CONFIG, config_path, raw, found, trust_all, commands)
            files.append(judged)
            if not judged.trusted:
                data = without_loosening(data, base)
            data.pop(trust.TRUST_SWITCH, None)  # never from the project, trusted or not
        mcp_path = self.root / trust.MCP_FILE
        mcp_raw = _read_bytes(mcp_path)
        if mcp_raw is not None:
            # mcp_project = "ignore" starts none of its servers; "trust" (from the
            # user, or from a trusted project file) starts them all.
            project = data or {}
            policy = env_values.get(
                "mcp_project", project.get("mcp_project", base.get("mcp_project"))
            )
            found = mcp_loosening(mcp_raw) if policy != "ignore" else []
            trusted = trust_all or policy == "trust"
            commands = list(_mcp_file_commands(mcp_raw)) if found else []
            files.append(self._judge(trust.MCP_FILE, mcp_path, mcp_raw, found, trusted, commands))
        image = trust_fingerprint(self.root)
        if image is not None:  # the sandbox image it defines runs programs at build time
            rel, path, fingerprint = image
            files.append(self._judge(rel, path, fingerprint, [IMAGE_TRUST_NOTE], trust_all))
        return data, trust.TrustReport(self.root, tuple(files), trust_all=trust_all)

    def _judge(
        self,
        rel: str,
        path: Path,
        raw: bytes,
        found: list[str],
        trusted_by_user: bool,
        commands: list[tuple[str, Path]] | None = None,
    ) -> trust.ProjectFile:
        # The scripts its commands name are part of what is trusted: one changed
        # byte in a hook script untrusts the file that names it.
        path_env = os.environ.get("PATH", os.defpath)
        named = {
            found_file
            for command, cwd in commands or []
            for found_file in workspace_files(command, self.root, path_env, self.root / cwd)
        }
        scripts = snapshot(self.root, named)
        own = trust.digest(raw)
        content = trust.digest(raw + b"\0scripts\0" + fingerprint(scripts)) if scripts else own
        # The switch is never taken from a project file, so a file that sets only
        # the switch stays untrusted (and its notice says so).
        only_switch = bool(found) and all(k.startswith(trust.TRUST_SWITCH) for k in found)
        trusted = not found or trusted_by_user
        trusted = trusted or self.store.is_trusted(self.root, rel, content)
        judged = trust.ProjectFile(
            rel,
            path,
            content,
            tuple(found),
            trusted and not only_switch,
            content=own,
            scripts=tuple(sorted(scripts.items())),
        )
        if self.record and not judged.trusted and not only_switch:
            self.store.trust(self.root, [judged])
            judged = replace(judged, trusted=True)
        return judged


def _config_commands(data: Mapping[str, Any]) -> Iterator[tuple[str, Path]]:
    """The host commands a settings file configures: hooks, MCP stdio servers, language
    servers and the status line (as command lines, with the folder they start in
    relative to the workspace)."""
    hooks = data.get("hooks")
    for configs in hooks.values() if isinstance(hooks, Mapping) else []:
        for config in configs if isinstance(configs, list) else []:
            if isinstance(config, Mapping) and isinstance(config.get("command"), str):
                yield config["command"], Path(".")
    yield from _server_commands(data.get("mcp_servers"))
    # A language server runs on the host with --sandbox none; its scripts count too.
    yield from _server_commands(data.get("lsp"), cwd=False)
    if isinstance(data.get("statusline_command"), str):
        yield data["statusline_command"], Path(".")


def _mcp_file_commands(raw: bytes) -> Iterator[tuple[str, Path]]:
    try:
        table = json.loads(raw.decode("utf-8"))
    except ValueError:
        return
    if isinstance(table, dict):
        yield from _server_commands(table.get("mcpServers"))


def _server_commands(servers: Any, *, cwd: bool = True) -> Iterator[tuple[str, Path]]:
    for server in servers.values() if isinstance(servers, Mapping) else []:
        if not isinstance(server, Mapping) or not isinstance(server.get("command"), str):
            continue
        args = server.get("args")
        words = (
            [server["command"], *(str(a) for a in args if isinstance(a, str | int | float))]
            if isinstance(args, list)
            else [server["command"]]
        )
        folder = server.get("cwd") if cwd else None
        yield shlex.join(words), Path(folder if isinstance(folder, str) else ".")


def _switch(env_values: Mapping[str, Any], user_values: Mapping[str, Any], prefix: str) -> bool:
    """The user's trust_project_settings (environment over user config)."""
    key = trust.TRUST_SWITCH
    value = env_values.get(key, user_values.get(key, False))
    try:
        return TypeAdapter(bool).validate_python(value)
    except ValidationError:
        where = f"environment variable {prefix}{key.upper()}" if key in env_values else None
        where = where or "the user config"
        raise ConfigError(f"{where}: bad value {value!r} for '{key}'.") from None


def _read_bytes(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
        return None
    except OSError as exc:
        raise ConfigError(f"config file {path} cannot be read ({exc.strerror}).") from None


def _parse_toml(raw: bytes, path: Path) -> dict[str, Any]:
    try:
        return tomllib.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise ConfigError(f"config file {path} is not UTF-8 text; fix or remove it.") from None
    except tomllib.TOMLDecodeError as exc:
        msg = f"config file {path} is not valid TOML ({exc}); fix or remove it."
        raise ConfigError(msg) from None
