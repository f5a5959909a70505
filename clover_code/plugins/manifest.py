"""``plugin.toml``: what a plugin bundles, read and checked.

A plugin is a folder holding a ``plugin.toml`` that names everything it
bundles; nothing it does not name is loaded::

    name = "lint-kit"                # the namespace: /lint-kit:fix, lint-kit:review
    version = "1.2.0"
    description = "Lint commands and a pre-commit check"
    commands = "commands"            # a folder of command files (Markdown)
    skills = "skills"                # a folder of skill folders (each with a SKILL.md)
    agents = "agents"                # a folder of agent definitions (Markdown)
    statusline_command = "${CLOVER_PLUGIN_ROOT}/bin/status"

    [[hooks.PreToolUse]]
    matcher = "shell"
    command = "${CLOVER_PLUGIN_ROOT}/hooks/check-command"

    [mcp_servers.docs]
    command = "${CLOVER_PLUGIN_ROOT}/bin/docs-server"

Folders are relative to the plugin's own folder and must lie inside it. In
every command (hooks, MCP servers' command, args, cwd and env, the status
line) ``${CLOVER_PLUGIN_ROOT}`` is the plugin's installed folder, and a word
starting with ``./`` is a path inside it. Each mistake is one sentence naming
the file and the key.
"""

from __future__ import annotations

import difflib
import os
import re
import shlex
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from clover_code.config.sections import HookConfig, HookEvent, McpServerConfig
from clover_code.errors import PluginError

__all__ = ["MANIFEST", "PLUGIN_ROOT", "Manifest", "Plugin", "read_plugin"]

MANIFEST = "plugin.toml"
PLUGIN_ROOT = "${CLOVER_PLUGIN_ROOT}"
"""Stands for the plugin's installed folder in its commands."""
_NAME = re.compile(r"^[a-z0-9][a-z0-9-]{0,39}$")
_FOLDERS = ("commands", "skills", "agents")


class Manifest(BaseModel):
    """The contents of a ``plugin.toml``."""

    model_config = ConfigDict(extra="forbid")

    name: str
    """Lower-case letters, digits and hyphens: the plugin's namespace."""
    version: str = ""
    description: str = ""
    commands: str | None = Field(None, min_length=1)
    """A folder of custom commands, run as ``/NAME:command``."""
    skills: str | None = Field(None, min_length=1)
    """A folder of skills, offered as ``NAME:skill``."""
    agents: str | None = Field(None, min_length=1)
    """A folder of agent definitions for the task tool, named ``NAME:agent``."""
    hooks: dict[HookEvent, list[HookConfig]] = Field(default_factory=dict)
    """Programs run at lifecycle points, as in the settings' ``[[hooks.EVENT]]``."""
    mcp_servers: dict[str, McpServerConfig] = Field(default_factory=dict)
    """MCP servers, as in the settings' ``[mcp_servers.NAME]``; named ``NAME:server``."""
    statusline_command: str | None = Field(None, min_length=1)
    """A program whose first line the app's status bar shows (when you set none)."""

    @field_validator("name")
    @classmethod
    def _plain_name(cls, value: str) -> str:
        if not _NAME.match(value):
            raise ValueError(
                "a plugin's name is 1 to 40 lower-case letters, digits and hyphens, "
                "starting with a letter or digit"
            )
        return value


@dataclass(frozen=True, slots=True)
class Plugin:
    """A plugin read from its folder: the manifest, with its commands made runnable."""

    folder: Path
    """The plugin's folder, resolved."""
    manifest: Manifest

    @property
    def name(self) -> str:
        """Its namespace."""
        return self.manifest.name

    def part(self, kind: str) -> Path | None:
        """The folder of its ``commands``, ``skills`` or ``agents`` (None: it bundles none)."""
        rel = _folders(self.manifest)[kind]
        return self.folder / rel if rel is not None else None

    def hooks(self) -> dict[HookEvent, list[HookConfig]]:
        """Its hooks, commands resolved into its folder."""
        return {
            event: [h.model_copy(update={"command": self._command(h.command)}) for h in configs]
            for event, configs in self.manifest.hooks.items()
        }

    def mcp_servers(self) -> dict[str, McpServerConfig]:
        """Its MCP servers by their namespaced name (``NAME:server``), resolved."""
        found: dict[str, McpServerConfig] = {}
        for name, config in self.manifest.mcp_servers.items():
            update: dict[str, Any] = {
                "args": [self._word(a) for a in config.args],
                "env": {k: self._text(v) for k, v in config.env.items()},
            }
            if config.command is not None:
                update["command"] = self._word(config.command)
            if config.cwd is not None:
                update["cwd"] = self._word(config.cwd)
            found[f"{self.name}:{name}"] = config.model_copy(update=update)
        return found

    def statusline_command(self) -> str | None:
        """Its status-line command, resolved (None: it bundles none)."""
        command = self.manifest.statusline_command
        return self._command(command) if command is not None else None

    def runs(self) -> list[str]:
        """Every program it would run, one line each (what ``install`` shows)."""
        lines = [
            f"hook {event}{f' ({h.matcher})' if h.matcher else ''}: {h.command}"
            for event, configs in self.hooks().items()
            for h in configs
        ]
        for name, server in self.mcp_servers().items():
            if server.type == "stdio":
                argv = [server.command or "", *server.args]
                lines.append(f"MCP server {name}: {shlex.join(argv)}")
            else:
                lines.append(f"MCP server {name}: {server.type} {server.url}")
        status = self.statusline_command()
        if status is not None:
            lines.append(f"status line: {status}")
        return lines

    def bundles(self) -> list[str]:
        """What else it brings (commands, skills, agents), one line each."""
        lines: list[str] = []
        for kind in _FOLDERS:
            folder = self.part(kind)
            names = sorted(_entries(folder, kind)) if folder is not None else []
            slash = "/" if kind == "commands" else ""
            if names:
                lines.append(f"{kind}: {', '.join(f'{slash}{self.name}:{n}' for n in names)}")
        return lines

    def _text(self, value: str) -> str:
        return value.replace(PLUGIN_ROOT, str(self.folder))

    def _word(self, word: str) -> str:
        word = self._text(word)
        return str(self.folder / word[2:]) if word.startswith("./") else word

    def _command(self, command: str) -> str:
        try:
            words = shlex.split(command)
        except ValueError:
            return self._text(command)  # the hook runner refuses it with its own sentence
        return shlex.join(self._word(w) for w in words)


def _folders(manifest: Manifest) -> dict[str, str | None]:
    return {"commands": manifest.commands, "skills": manifest.skills, "agents": manifest.agents}


def _entries(folder: Path, kind: str) -> Iterator[str]:
    """The names a folder of commands, skills or agents offers, by their files (a
    skill's or agent's own ``name`` may differ)."""
    if kind == "skills":
        yield from (p.name for p in _children(folder) if (p / "SKILL.md").is_file())
    elif kind == "commands":
        for path in folder.rglob("*.md") if folder.is_dir() else ():
            yield ":".join(path.relative_to(folder).with_suffix("").parts)
    else:
        yield from (p.stem for p in _children(folder) if p.suffix == ".md")


def _children(folder: Path) -> list[Path]:
    try:
        return sorted(folder.iterdir())
    except OSError:
        return []


def read_plugin(folder: Path) -> Plugin:
    """The plugin in ``folder``; ``PluginError`` says, one sentence per mistake, what is
    wrong with its ``plugin.toml``."""
    folder = Path(os.path.realpath(folder))
    path = folder / MANIFEST
    try:
        data = tomllib.loads(path.read_bytes().decode("utf-8"))
    except FileNotFoundError:
        raise PluginError(f"{folder} has no {MANIFEST}; a plugin's folder needs one.") from None
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) else "it is not UTF-8 text"
        raise PluginError(f"{path} cannot be read ({reason}).") from None
    except tomllib.TOMLDecodeError as exc:
        raise PluginError(f"{path} is not valid TOML ({exc}); fix it.") from None
    try:
        manifest = Manifest.model_validate(data)
    except ValidationError as exc:
        raise PluginError(" ".join(_sentences(exc, path))) from None
    problems = [p for kind in _FOLDERS if (p := _folder_problem(folder, manifest, kind))]
    if problems:
        raise PluginError(" ".join(f"{path}: {p}." for p in problems))
    return Plugin(folder, manifest)


def _folder_problem(root: Path, manifest: Manifest, kind: str) -> str | None:
    rel = _folders(manifest)[kind]
    if rel is None:
        return None
    if os.path.isabs(rel):
        return f"{kind} = {rel!r} must be a folder relative to the plugin's own"
    target = Path(os.path.realpath(root / rel))
    if not target.is_relative_to(root):
        return f"{kind} = {rel!r} lies outside the plugin's folder"
    if not target.is_dir():
        return f"{kind} = {rel!r} is not a folder of the plugin"
    return None


def _sentences(exc: ValidationError, path: Path) -> list[str]:
    """One sentence per mistake, naming the file and the key."""
    found: list[str] = []
    for err in exc.errors():
        parts = [str(part) for part in err["loc"] if part != "[key]"]
        key = ".".join(parts)
        if err["type"] == "extra_forbidden" and len(parts) > 1:
            table = ".".join(parts[:-1])
            found.append(f"{path}: unknown key '{parts[-1]}' in '{table}'.")
        elif err["type"] == "extra_forbidden":
            close = difflib.get_close_matches(key, list(Manifest.model_fields), n=1)
            hint = f"; did you mean '{close[0]}'?" if close else f" (known keys: {_KNOWN})."
            found.append(f"{path}: unknown key '{key}'{hint}")
        elif err["type"] == "missing":
            found.append(f"{path}: '{key}' is missing; every plugin needs it.")
        else:
            cause = (err.get("ctx") or {}).get("error") if err["type"] == "value_error" else None
            message = str(cause or err["msg"]).rstrip(".")
            found.append(f"{path}: bad value {err.get('input')!r} for '{key}': {message}.")
    return found


_KNOWN = ", ".join(Manifest.model_fields)
