"""Permission rules: the config's allow and deny lists, combined with the approval mode.

``PermissionPolicy.decide`` gives the final word on a tool call:

1. a deny rule that matches any part of the call refuses it, in every mode;
2. a mode that refuses the kind of tool (read-only) refuses it;
3. a shell command that cannot be vouched for (see ``shell_parse``) is asked
   about, even in full-auto (fail closed);
4. a shell command the check does not fully understand (see ``shell_syntax``:
   arithmetic on variables, ``eval``, ``${x@P}``...) is asked about whenever a
   deny rule exists, even in full-auto, since a denied program could hide in
   it; without deny rules the mode decides, and a mode that would ask gets the
   construct named. Such a command is never approved by an allow rule;
5. a shell command that writes outside the workspace (redirections, and
   write options of known programs such as ``sort -o``, ``sed -i``,
   ``git diff --output``; ``/dev/null`` and the like excepted) or to a path
   known only at run time is never approved by a rule: it is asked about
   unless the mode runs every command (full-auto);
6. a call whose every part matches an allow rule runs without asking (a
   shell command's writes also need the mode to allow edits or an ``edit``
   allow rule, so ``git diff *`` never approves ``--output``);
7. otherwise the mode decides.

Between 1 and 2, a file tool writing one of the project's own config files
(``clover_code.config.trust.PROTECTED_PATHS``: ``.clover/``, ``.mcp.json``) is
asked about in every mode, whatever the allow rules say; headless refuses it.

Shell rules are command patterns matched word by word against each program
a command line runs (``"pytest *"``: a standalone ``*`` stands for any number
of words, ``*`` inside a word for any characters). A program started through
a wrapper matches when the wrapper itself matches, or when every wrapper
around it is transparent (``timeout 5 pytest`` matches ``"pytest *"``;
``sudo pytest`` does not). Deny rules are also tried on every wrapper and on
the bare name of a program given by path (``/bin/rm`` is ``rm``).

Other rules are path globs relative to the workspace (``"docs/**"``,
``".env"``) on the paths a call names; the ``edit`` key covers every file
write, shell redirections included, and ``read`` every read or search.
Paths are judged as given and as resolved, so a link cannot dodge a deny
rule; a path outside the workspace is never allowed by a rule.

Rules for ``fetch`` tools (``web_fetch``) are domain rules on the URL's host
(``"docs.python.org"``, ``"*.readthedocs.io"``, see ``net.domains``); a
fetch no rule covers is asked about in every mode but full-auto.

The rule tables are read in ``rule_tables.py``, path rules and the paths a
call names in ``path_rules.py``; the "allow for this session" prefix of a
command line comes from ``session_rule.py``.
"""

from __future__ import annotations

import copy
import os
import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from clover_code.agent.permissions.approval import Verdict, verdict
from clover_code.agent.permissions.path_rules import locate, paths_of
from clover_code.agent.permissions.rule_tables import SHELL_TOOL, RuleTables, matching_keys
from clover_code.agent.permissions.session_rule import command_session_prefix
from clover_code.agent.permissions.shell.rules import CommandPattern, allowed
from clover_code.config.settings import ApprovalMode, PermissionRules
from clover_code.config.trust import is_protected
from clover_code.net.domains import host_of, matching_rule
from clover_code.tools.base import ToolKind

if TYPE_CHECKING:
    from clover_code.agent.permissions.shell.parse import Write

__all__ = ["PermissionPolicy", "Ruling"]


@dataclass(frozen=True, slots=True)
class Ruling:
    """A verdict on a call and the sentence that explains it."""

    verdict: Verdict
    reason: str
    protected: bool = False
    """The call writes a protected config file: only the user may approve it."""


class PermissionPolicy:
    """The allow and deny rules of one session, plus what the user allowed in it;
    ``contained``: its commands run in a contained sandbox (``approval.verdict``)."""

    def __init__(self, rules: PermissionRules, root: Path, *, contained: bool = False) -> None:
        self.root = Path(os.path.realpath(root))
        self.contained = contained
        self._rules = RuleTables(rules)
        self._session: list[CommandPattern] = []

    def rooted_at(self, root: Path, *, contained: bool) -> PermissionPolicy:
        """These rules for another workspace (a child agent's worktree): paths are judged
        against ``root``, and what the user allows for the session holds in both."""
        other = copy.copy(self)  # the rule tables and the session list are shared
        other.root = Path(os.path.realpath(root))
        other.contained = contained
        return other

    # ---------------------------------------------------------------- decide

    def decide(
        self,
        mode: ApprovalMode,
        name: str,
        kind: ToolKind,
        arguments: Mapping[str, Any],
        *,
        on_host: bool = False,
    ) -> Ruling:
        """The final verdict on a call: the rules combined with the approval mode;
        ``on_host``: the tool runs on the host whatever the sandbox (``Tool.runs_on_host``)."""
        contained = self.contained and not on_host
        command = arguments.get("command")
        if kind == "execute" and isinstance(command, str):
            edits = verdict(mode, "edit") == "allow"
            runs = verdict(mode, kind, contained=contained) == "allow"
            ruling = self.check_shell(command, edits_allowed=edits, runs_allowed=runs, tool=name)
        else:
            ruling = self.check_tool(name, kind, arguments)
        if ruling is not None and ruling.verdict == "deny":
            return ruling
        if kind == "edit":
            protected = self.protected_write(name, arguments)
            if protected is not None:
                return protected
        base = verdict(mode, kind, contained=contained)
        if base == "deny":
            return Ruling(
                "deny", f"approval mode '{mode}' does not allow {kind} tools such as {name}."
            )
        if ruling is not None:
            return ruling
        return Ruling(base, f"approval mode '{mode}' says {base} for {kind} tools.")

    # ----------------------------------------------------------------- shell

    def check_shell(
        self,
        command: str,
        *,
        edits_allowed: bool = False,
        runs_allowed: bool = False,
        tool: str = SHELL_TOOL,
    ) -> Ruling | None:
        """What the rules say about a shell command line; None when no rule decides.

        ``edits_allowed``: the mode lets files in the workspace be written without
        asking, so a write there needs no allow rule of its own. ``runs_allowed``:
        the mode runs every command (full-auto), so what no rule covers runs.
        """
        # The shell parser (tree-sitter and its tables) loads with the first command.
        from clover_code.agent.permissions.shell.parse import parse_shell
        from clover_code.agent.permissions.shell.verdict import write_paths

        parsed = parse_shell(command)
        deny = self._rules.command_rules("deny", tool)
        for cmd in parsed.commands:
            for layer in cmd.layers:
                for pattern in deny:
                    if not layer.dynamic and pattern.matches(layer, deny=True):
                        shown = shlex.join(layer.argv)
                        return Ruling("deny", f"the deny rule '{pattern.text}' forbids `{shown}`.")
        writes = write_paths(parsed, self.root)
        for _write, paths in writes:
            for path in paths or ():
                denied = self._path_denied(path, "edit", SHELL_TOOL)
                if denied is not None:
                    return denied
        if parsed.problem is not None:
            return Ruling("ask", f"{parsed.problem}, so it needs approval.")
        edit_denials = bool(self._rules.path_rules("deny", "edit", SHELL_TOOL))
        if parsed.opaque is not None and (deny or edit_denials):
            return Ruling(
                "ask",
                f"the command uses {parsed.opaque}, which this check does not fully "
                "understand, so a denied program could hide in it and it needs approval.",
            )
        if deny and any(layer.dynamic for cmd in parsed.commands for layer in cmd.layers):
            return Ruling(
                "ask",
                "a program this command runs is only known at run time, so the deny rules "
                "cannot be checked and it needs approval.",
            )
        unknown = next((w for w, paths in writes if paths is None), None)
        if unknown is not None and edit_denials:
            return Ruling(
                "ask",
                "the command writes to a file named only at run time, so the deny rules "
                "cannot be checked and it needs approval.",
            )
        blocked = self._beyond_rules(parsed.opaque, writes)
        if blocked is not None:
            return None if runs_allowed else Ruling("ask", blocked)
        allow = self._rules.command_rules("allow", tool) + self._session
        if not parsed.commands or not all(allowed(cmd, allow) for cmd in parsed.commands):
            return None
        for _write, paths in writes:
            for path in paths or ():
                if not edits_allowed and not self._path_allowed(path, "edit", SHELL_TOOL):
                    return None
        return Ruling("allow", "every program the command runs matches an allow rule.")

    def _beyond_rules(
        self, opaque: str | None, writes: list[tuple[Write, list[str] | None]]
    ) -> str | None:
        """Why no allow rule may approve the command (its reason), or None."""
        if opaque is not None:
            return (
                f"the command uses {opaque}, which this check does not fully understand, "
                "so no rule can approve it and it needs approval."
            )
        for write, paths in writes:
            if paths is None:
                return (
                    f"the command writes (through {write.via}) to a path known only at "
                    "run time, so it needs approval."
                )
            for path in paths:
                if locate(self.root, path)[1] is None:
                    return (
                        f"the command writes (through {write.via}) to '{write.target}', "
                        "outside the workspace, so it needs approval whatever the rules say."
                    )
        return None

    def session_prefix(self, command: str) -> str | None:
        """What "allow for this session" would cover for ``command``, e.g. ``git status``
        or ``cd && pytest``; None when no safe prefix exists (wrappers that add power,
        interpreters not running a named module, programs only known at run time)."""
        return command_session_prefix(command)

    def allow_for_session(self, prefix: str) -> None:
        """Allow, for the rest of the session, commands starting with ``prefix`` (as
        ``session_prefix`` gave it)."""
        for part in prefix.split(" && "):
            words = shlex.split(part)
            if words:
                self._session.append(CommandPattern.prefix(words))

    # ------------------------------------------------------------ other tools

    def check_tool(self, name: str, kind: ToolKind, arguments: Mapping[str, Any]) -> Ruling | None:
        """What the rules say about a non-shell call; None when no rule decides."""
        if kind == "fetch" and isinstance(arguments.get("url"), str):
            return self._check_domain(name, str(arguments["url"]))
        group = "edit" if kind == "edit" else "read" if kind in ("read", "search") else None
        paths = paths_of(name, arguments)
        if not paths:
            for table in ("deny", "allow"):
                rule = next(
                    (r for r in self._rules.path_rules(table, group, name) if r.text == "*"), None
                )
                if rule is not None:
                    result: Verdict = "deny" if table == "deny" else "allow"
                    return Ruling(result, f"the {table} rule '*' in {rule.where} covers {name}.")
            return None
        for path in paths:
            denied = self._path_denied(path, group, name)
            if denied is not None:
                return denied
        if all(self._path_allowed(path, group, name) for path in paths):
            return Ruling("allow", f"every path {name} touches matches an allow rule.")
        return None

    def _check_domain(self, name: str, url: str) -> Ruling | None:
        """What the domain rules of ``name`` say about fetching ``url``."""
        host = host_of(url)
        if host is None:
            return None  # the tool refuses it with its own sentence
        for table in ("deny", "allow"):
            for key in matching_keys(self._rules.paths[table], None, name):
                rule = matching_rule((r.text for r in self._rules.paths[table][key]), host)
                if rule is not None:
                    result: Verdict = "deny" if table == "deny" else "allow"
                    return Ruling(
                        result,
                        f"the {table} rule '{rule}' in permissions.{table}.{key} "
                        f"covers the host {host}.",
                    )
        return None

    def protected_write(self, name: str, arguments: Mapping[str, Any]) -> Ruling | None:
        """An "ask" ruling when a file tool would write a protected project config
        file (settings, MCP servers): the agent must not grant itself permissions.

        A sandboxed shell command can still write these files; the loader's trust
        check (a changed file is untrusted again) covers that path.
        """
        for path in paths_of(name, arguments):
            if any(is_protected(form) for form in locate(self.root, path)[0]):
                return Ruling(
                    "ask",
                    f"'{path}' is one of the project's own config files, which only the "
                    "user may approve writing, in every approval mode.",
                    protected=True,
                )
        return None

    # ---------------------------------------------------------------- helpers

    def _path_denied(self, path: str, group: str | None, name: str) -> Ruling | None:
        forms, _ = locate(self.root, path)
        for rule in self._rules.path_rules("deny", group, name):
            if any(rule.matches(form) for form in forms):
                return Ruling(
                    "deny", f"the deny rule '{rule.text}' in {rule.where} covers '{path}'."
                )
        return None

    def _path_allowed(self, path: str, group: str | None, name: str) -> bool:
        _, inside = locate(self.root, path)
        if inside is None:
            return False
        return any(rule.matches(inside) for rule in self._rules.path_rules("allow", group, name))
