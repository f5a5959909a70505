"""Which installed plugins a session uses, checked before anything of theirs runs.

A session uses every enabled plugin, and the installed ones its settings name
(``plugins = ["lint-kit"]``; a project file names them only once the user
trusted it, ``clover_code.config.trust``). Before it is used, each plugin is
checked: its folder must lie outside the workspace (where the agent and the
sandbox could write it), its files must be exactly those the user said yes to
at install (``tree_digest``) and its ``plugin.toml`` must read cleanly. A
plugin that fails is skipped with one sentence; the session goes on. An
administrator's ``disabled = ["plugins"]`` loads none, and ``["hooks"]``
keeps their hooks from running.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from clover_code.config.sections import HookConfig, HookEvent, McpServerConfig
from clover_code.config.settings import Settings
from clover_code.errors import PluginError
from clover_code.plugins.store import InstalledPlugin, PluginStore, tree_digest

if TYPE_CHECKING:
    from clover_code.plugins.manifest import Plugin

__all__ = ["ActivePlugins", "active_plugins", "load_installed"]


@dataclass(frozen=True, slots=True)
class ActivePlugins:
    """The plugins a session uses, and what to tell the user about the others."""

    plugins: tuple[Plugin, ...] = ()
    notices: tuple[str, ...] = ()
    hooks_off: str | None = None
    """Why their hooks do not run (an administrator's policy), or None."""

    def parts(self, kind: str) -> list[tuple[str, Path]]:
        """(plugin name, folder) of each plugin's ``commands``, ``skills`` or ``agents``."""
        return [(p.name, part) for p in self.plugins if (part := p.part(kind)) is not None]

    def hooks(self) -> dict[HookEvent, list[HookConfig]]:
        """Their hooks by event, in plugin order (none when an administrator forbids hooks)."""
        joined: dict[HookEvent, list[HookConfig]] = {}
        if self.hooks_off is not None:
            return joined
        for plugin in self.plugins:
            for event, configs in plugin.hooks().items():
                joined.setdefault(event, []).extend(configs)
        return joined

    def mcp_servers(self) -> list[tuple[str, McpServerConfig, str]]:
        """(namespaced name, config, plugin name) of each of their MCP servers."""
        return [
            (name, config, plugin.name)
            for plugin in self.plugins
            for name, config in plugin.mcp_servers().items()
        ]

    def statusline_command(self) -> tuple[str | None, str | None]:
        """The status-line command of the first plugin that bundles one, and a notice
        naming the ones left out when several do."""
        bundling = [p for p in self.plugins if p.statusline_command() is not None]
        if not bundling:
            return None, None
        note = None
        if len(bundling) > 1:
            others = ", ".join(p.name for p in bundling[1:])
            note = (
                f"plugins {bundling[0].name} and {others} each bring a status line; "
                f"{bundling[0].name}'s is used."
            )
        return bundling[0].statusline_command(), note


def active_plugins(
    settings: Settings, root: Path, store: PluginStore | None = None
) -> ActivePlugins:
    """The plugins a session in workspace ``root`` uses, each checked."""
    store = store or PluginStore()
    try:
        installed = store.read()
    except PluginError as exc:
        return ActivePlugins(notices=(f"no plugin was loaded: {exc}",))
    notices: list[str] = []
    wanted = [p for p in installed.values() if p.enabled]
    for name in dict.fromkeys(settings.plugins):
        if name not in installed:
            notices.append(
                f"the settings name the plugin {name}, which is not installed; install it "
                "with: clover-code plugin install SOURCE"
            )
        elif not installed[name].enabled:
            wanted.append(installed[name])
    if not wanted:
        return ActivePlugins(notices=tuple(notices))
    off = settings.managed.feature_clause("plugins")
    if off is not None:
        return ActivePlugins(notices=(*notices, f"no plugin was loaded because {off}."))
    plugins: list[Plugin] = []
    for entry in sorted(wanted, key=lambda p: p.name):
        try:
            plugins.append(load_installed(store, entry, root))
        except PluginError as exc:
            notices.append(f"plugin {entry.name} was skipped: {exc}")
    hooks_off = settings.managed.feature_clause("hooks")
    if hooks_off is not None and any(p.manifest.hooks for p in plugins):
        notices.append(f"the plugins' hooks do not run because {hooks_off}.")
    return ActivePlugins(tuple(plugins), tuple(notices), hooks_off)


def load_installed(store: PluginStore, entry: InstalledPlugin, root: Path | None) -> Plugin:
    """The installed plugin ``entry``, checked: outside the workspace ``root``, its files
    as installed, its ``plugin.toml`` clean; ``PluginError`` says what is wrong."""
    folder = Path(os.path.realpath(store.folder(entry)))
    if root is not None and folder.is_relative_to(os.path.realpath(root)):
        raise PluginError(
            f"its folder {folder} is inside the workspace, where the agent could change it."
        )
    if not folder.is_dir():
        raise PluginError(f"its folder {folder} is missing; install it again.")
    if tree_digest(folder) != entry.digest:
        raise PluginError(
            f"its files in {folder} changed since you installed it; review them, then "
            f"install it again (clover-code plugin remove {entry.name}, then install)."
        )
    # The manifest's models load only when a plugin is in use.
    from clover_code.plugins.manifest import read_plugin

    plugin = read_plugin(folder)
    if plugin.name != entry.name:
        raise PluginError(f"its plugin.toml now names it {plugin.name}.")
    return plugin
