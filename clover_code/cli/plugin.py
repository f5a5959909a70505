"""``clover-code plugin``: install, list, enable, disable and remove plugins.

    clover-code plugin install PATH | GIT_URL | PACKAGE [--yes]
    clover-code plugin list
    clover-code plugin enable NAME
    clover-code plugin disable NAME
    clover-code plugin remove NAME

``install`` fetches the plugin (``clover_code.plugins.install``), shows every
program it would run on this machine and everything else it adds, and keeps
it only when the user says yes (``--yes`` says it without a terminal).
Installed plugins are the user's, used in every session while enabled. An
administrator's ``disabled = ["plugins"]`` refuses ``install`` and ``enable``.
"""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path
from typing import TextIO

from clover_code.config.load import refuse_flags
from clover_code.errors import CloverError, PluginError, UsageError
from clover_code.plugins.active import load_installed
from clover_code.plugins.install import Staged, stage
from clover_code.plugins.manifest import Plugin
from clover_code.plugins.store import InstalledPlugin, PluginStore

__all__ = ["build_parser", "main"]


def build_parser() -> argparse.ArgumentParser:
    """The plugin command's subcommands."""
    parser = argparse.ArgumentParser(
        prog="clover-code plugin",
        description="Install and manage plugins: bundles of commands, skills, agents, hooks, "
        "MCP servers and a status line (docs/plugins.md).",
    )
    sub = parser.add_subparsers(
        dest="command", required=True, metavar="{install,list,enable,disable,remove}"
    )
    install = sub.add_parser(
        "install", help="install a plugin from a folder, a git URL or a Python package"
    )
    install.add_argument(
        "source", help="a plugin's folder, a git URL (file://, https://, ...) or a package"
    )
    install.add_argument(
        "--yes", action="store_true", help="install without asking (after showing what it runs)"
    )
    sub.add_parser("list", help="the installed plugins, what each runs and adds")
    for name, what in (
        ("enable", "use a plugin in every session"),
        ("disable", "stop using a plugin (it stays installed)"),
        ("remove", "delete an installed plugin"),
    ):
        sub.add_parser(name, help=what).add_argument("name", help="the plugin's name")
    return parser


def main(argv: list[str]) -> int:
    """Run one plugin command; returns the exit code."""
    args = build_parser().parse_args(argv)
    store = PluginStore()
    try:
        if args.command == "install":
            return _install(store, args.source, yes=args.yes, out=sys.stdout)
        if args.command == "list":
            return _list(store, sys.stdout)
        if args.command == "remove":
            return _remove(store, args.name, sys.stdout)
        return _switch(store, args.name, args.command == "enable", sys.stdout)
    except CloverError as exc:
        sys.stderr.write(f"clover-code: {exc}\n")
        return int(exc.exit_code)


def _refuse_if_off() -> None:
    clause = refuse_flags({}).feature_clause("plugins")
    if clause is not None:
        raise PluginError(f"plugins cannot be installed or enabled because {clause}.")


def _install(store: PluginStore, source: str, *, yes: bool, out: TextIO) -> int:
    _refuse_if_off()
    staged = stage(source, store, Path.cwd())
    try:
        out.write(_described(staged))
        out.flush()
        if not yes:
            if not sys.stdin.isatty():
                raise UsageError(
                    f"installing {staged.name} needs your yes, and there is no terminal to ask "
                    "on; review what it runs (above) and rerun with --yes."
                )
            if input(f"Install plugin {staged.name}? [y/N] ").strip().lower() not in ("y", "yes"):
                out.write("Not installed.\n")
                return 0
        entry = staged.install()
    finally:
        staged.discard()
    out.write(f"Installed {entry.name} in {store.folder(entry)}; it is enabled.\n")
    return 0


def _described(staged: Staged) -> str:
    plugin = staged.preview()
    manifest = plugin.manifest
    version = f" {manifest.version}" if manifest.version else ""
    lines = [f"Plugin {plugin.name}{version} from {staged.source} ({staged.kind})"]
    if manifest.description:
        lines.append(f"  {manifest.description}")
    runs = plugin.runs()
    if runs:
        lines.append("It runs these programs on this machine, as you:")
        lines += [f"  {line}" for line in runs]
    else:
        lines.append("It runs no program of its own.")
    adds = staged.plugin.bundles()
    if adds:
        lines.append("It adds:")
        lines += [f"  {line}" for line in adds]
    return "\n".join(lines) + "\n"


def _list(store: PluginStore, out: TextIO) -> int:
    installed = store.read()
    clause = refuse_flags({}).feature_clause("plugins")
    if clause is not None:
        out.write(f"Plugins are not loaded because {clause}.\n")
    if not installed:
        out.write("No plugins installed. Install one with: clover-code plugin install SOURCE\n")
        return 0
    for entry in installed.values():
        out.write(_entry_lines(store, entry))
    return 0


def _entry_lines(store: PluginStore, entry: InstalledPlugin) -> str:
    state = "enabled" if entry.enabled else "disabled"
    version = f" {entry.version}" if entry.version else ""
    head = f"{entry.name}{version} ({state}) from {entry.source}"
    try:
        plugin: Plugin = load_installed(store, entry, None)
    except PluginError as exc:
        return f"{head}\n  not usable: {exc}\n"
    lines = [head, *(f"  runs {line}" for line in plugin.runs())]
    lines += [f"  adds {line}" for line in plugin.bundles()]
    return "\n".join(lines) + "\n"


def _switch(store: PluginStore, name: str, enabled: bool, out: TextIO) -> int:
    if enabled:
        _refuse_if_off()
    installed = store.read()
    entry = store.get(name)
    store.write({**installed, name: entry.model_copy(update={"enabled": enabled})})
    out.write(f"{name} is {'enabled' if enabled else 'disabled'}.\n")
    return 0


def _remove(store: PluginStore, name: str, out: TextIO) -> int:
    installed = store.read()
    entry = store.get(name)
    del installed[name]
    store.write(installed)  # no longer used, even if deleting its files fails below
    top = store.root / Path(entry.path).parts[0]
    shutil.rmtree(top, ignore_errors=True)
    out.write(f"Removed {name}.\n")
    return 0
