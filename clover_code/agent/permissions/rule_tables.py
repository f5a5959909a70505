"""The allow and deny tables of a config, and which of their keys apply to a tool.

Each key's patterns are read both ways, since which way applies depends on
the tool a call goes to: as command patterns (``shell.rules``) for shell
tools, and as path globs or domain rules (``path_rules``) for the others. A
key applies to a tool when it is the tool's name, its group (``edit``,
``read``), or a glob over tool names; a shell command's writes are judged by
the ``edit`` key alone.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Mapping
from typing import Any

from clover_code.agent.permissions.path_rules import PathRule, path_rule
from clover_code.agent.permissions.shell.rules import CommandPattern
from clover_code.config.settings import PermissionRules

__all__ = ["SHELL_TOOL", "RuleTables", "matching_keys"]

SHELL_TOOL = "shell"
_GROUPS = ("edit", "read")


def matching_keys(table: Mapping[str, Any], group: str | None, name: str) -> list[str]:
    """The keys of ``table`` that apply to the tool ``name`` of ``group``."""
    return [
        key
        for key in table
        if key in (name, group) or (key not in _GROUPS and fnmatch.fnmatchcase(name, key))
    ]


class RuleTables:
    """The ``allow`` and ``deny`` tables of ``rules``, each read as command patterns
    (``commands``) and as path rules (``paths``)."""

    def __init__(self, rules: PermissionRules) -> None:
        self.commands: dict[str, dict[str, list[CommandPattern]]] = {}
        self.paths: dict[str, dict[str, list[PathRule]]] = {}
        for table, entries in (("allow", rules.allow), ("deny", rules.deny)):
            self.commands[table] = {}
            self.paths[table] = {}
            for key, patterns in entries.items():
                # A key's patterns are read both ways; which way applies depends
                # on the tool a call goes to.
                where = f"permissions.{table}.{key}"
                self.commands[table][key] = [CommandPattern.parse(p, where) for p in patterns]
                self.paths[table][key] = [path_rule(p, where) for p in patterns]

    def command_rules(self, table: str, tool: str) -> list[CommandPattern]:
        """The command patterns of ``table`` that apply to the shell tool ``tool``."""
        rules = self.commands[table]
        return [p for key in matching_keys(rules, None, tool) for p in rules[key]]

    def path_rules(self, table: str, group: str | None, name: str) -> list[PathRule]:
        """The path rules of ``table`` that apply to the tool ``name`` of ``group``."""
        rules = self.paths[table]
        keys = matching_keys(rules, group, name)
        if name == SHELL_TOOL and group == "edit":
            keys = ["edit"] if "edit" in rules else []
        return [r for key in keys for r in rules[key]]
