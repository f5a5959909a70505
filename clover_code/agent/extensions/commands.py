"""Custom commands: Markdown prompt files run as ``/name args``.

A command is a ``.md`` file in the project's ``.clover/commands/`` or the user
config dir's ``commands/`` (a project command wins over a user one of the same
name); a sub-folder gives a namespace (``frontend/lint.md`` is
``/frontend:lint``), and so does a plugin (``/plugin:command``; the project's or
the user's command of the same name wins, with a note). Optional YAML front matter: ``description``,
``argument-hint`` and ``allowed-tools`` (the only tools the model may use for
that prompt; it narrows, never grants: approvals and rules still apply). The
body is the prompt, with ``$ARGUMENTS`` (everything after the name), ``$1`` ..
``$9`` (the words, split like a shell would) and ``@path`` (the file's text,
confined to the workspace) filled in.

Built-in slash commands win on a name clash (the file is skipped with a note).
Front ends: ``load_commands`` finds them, ``match`` recognises ``/name args``
in a prompt, ``expand`` turns one into the prompt the model gets.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from clover_code.agent.extensions.frontmatter import FrontMatterError, split_front_matter
from clover_code.agent.permissions.policy import PermissionPolicy
from clover_code.config.settings import ApprovalMode
from clover_code.errors import WorkspaceError
from clover_code.tools.workspace import Workspace

__all__ = [
    "BUILTIN_COMMANDS",
    "PROJECT_COMMANDS",
    "CustomCommand",
    "ExpandedPrompt",
    "expand",
    "load_commands",
    "match",
    "prepare",
    "read_rule",
]

PROJECT_COMMANDS = ".clover/commands"
"""Where a project keeps its commands, relative to the workspace root."""
BUILTIN_COMMANDS = frozenset(
    {
        "help", "model", "approval", "sandbox", "undo", "rewind", "diff", "compact", "clear",
        "sessions", "resume", "retry", "cost", "quit", "exit", "skills", "fork", "plan", "review",
        "jobs", "export",
    }
)  # fmt: skip
"""The app's own slash commands (and a few it is getting): they win on a clash."""
CLAUDE_TOOL_NAMES = {
    "bash": "shell",
    "read": "read_file",
    "write": "write_file",
    "edit": "edit_file",
    "multiedit": "edit_file",
    "grep": "grep",
    "glob": "glob",
    "ls": "list_files",
    "todowrite": "todo",
}
"""Claude Code's tool names in ``allowed-tools``, so its command files work unchanged."""
MAX_INCLUDE_BYTES = 100_000
"""Largest file an ``@path`` brings into a prompt."""
# Patterns as text: ``re`` compiles them on first use (most sessions have no command).
_SEGMENT = r"^[A-Za-z0-9][A-Za-z0-9_.-]*$"
_POSITIONAL = r"\$([1-9])"
_INCLUDE = r"(?<![\w@/])@([\w./-]*[\w/-])"


@dataclass(frozen=True, slots=True)
class CustomCommand:
    """One command file."""

    name: str
    """The name after the slash, e.g. ``frontend:lint``."""
    description: str
    argument_hint: str
    allowed_tools: frozenset[str] | None
    """The only tools the model may use for this prompt (None: all)."""
    body: str
    path: Path
    source: str
    """``project``, ``user`` or ``plugin NAME``."""


@dataclass(frozen=True, slots=True)
class ExpandedPrompt:
    """A command turned into the prompt the model gets."""

    command: str
    text: str
    allowed_tools: frozenset[str] | None
    notes: tuple[str, ...] = ()
    """Problems the user should hear about (an ``@path`` that could not be included)."""


def load_commands(
    root: Path,
    *,
    config_dir: Path | None,
    reserved: Collection[str] = BUILTIN_COMMANDS,
    notes: list[str] | None = None,
    plugins: Sequence[tuple[str, Path]] = (),
) -> list[CustomCommand]:
    """The commands of workspace ``root``, of the user and of ``plugins`` (each plugin's
    name and commands folder; its commands are ``/plugin:command``), sorted by name.

    Skipped files (bad front matter, a bad name, a clash) add a note to ``notes``."""
    places = [(root / PROJECT_COMMANDS, "project", "")]
    if config_dir is not None:
        places.append((config_dir / "commands", "user", ""))
    places += [(folder, f"plugin {name}", f"{name}:") for name, folder in plugins]
    found: dict[str, CustomCommand] = {}
    said = notes if notes is not None else []
    for base, source, prefix in places:
        for path in sorted(base.rglob("*.md")) if base.is_dir() else []:
            parts = path.relative_to(base).with_suffix("").parts
            if not all(re.match(_SEGMENT, part) for part in parts):
                said.append(f"command file {path} was skipped: use letters, digits, '_', '-', '.'.")
                continue
            name = prefix + ":".join(parts)
            if name in reserved:
                said.append(
                    f"command file {path} was skipped: /{name} is a built-in command, which wins."
                )
                continue
            if name in found and prefix:
                said.append(
                    f"command file {path} of {source} was skipped: /{name} is also "
                    f"{found[name].path}, which wins."
                )
                continue
            if name in found:
                continue  # the project's command wins over the user's
            try:
                found[name] = _read(path, name, source)
            except (FrontMatterError, OSError, UnicodeDecodeError) as exc:
                reason = "it is not UTF-8 text" if isinstance(exc, UnicodeDecodeError) else exc
                said.append(f"command file {path} was skipped: {reason}.")
    return sorted(found.values(), key=lambda c: c.name)


def _read(path: Path, name: str, source: str) -> CustomCommand:
    meta, body = split_front_matter(path.read_text("utf-8"))
    description = meta.get("description")
    if description is None:
        first = next((ln.strip() for ln in body.splitlines() if ln.strip()), "")
        description = first.lstrip("# ")[:100]
    hint = meta.get("argument-hint", "")
    if not isinstance(description, str) or not isinstance(hint, str):
        raise FrontMatterError("description and argument-hint must be text")
    if not body.strip():
        raise FrontMatterError("it has no prompt after the front matter")
    return CustomCommand(
        name=name,
        description=" ".join(description.split()),
        argument_hint=hint,
        allowed_tools=_tool_names(meta.get("allowed-tools")),
        body=body.strip(),
        path=path,
        source=source,
    )


def _tool_names(value: Any) -> frozenset[str] | None:
    """``allowed-tools`` as tool names: a list or a comma-separated text; a rule in
    parentheses (Claude Code's ``Bash(git status:*)``) keeps just the tool."""
    if value is None:
        return None
    if isinstance(value, str):
        items = re.findall(r"[^,\s(]+(?:\([^)]*\))?", value)
    elif isinstance(value, list) and all(isinstance(v, str) for v in value):
        items = value
    else:
        raise FrontMatterError("allowed-tools must be a list of tool names or a text of them")
    names = {item.split("(", 1)[0].strip() for item in items}
    return frozenset(CLAUDE_TOOL_NAMES.get(n.lower(), n) for n in names if n)


def match(text: str, commands: Sequence[CustomCommand]) -> tuple[CustomCommand, str] | None:
    """The command a ``/name args`` prompt names, and its arguments; None otherwise."""
    found = re.match(r"/(\S+)\s*(.*)", text, re.DOTALL)
    if found is None:
        return None
    command = next((c for c in commands if c.name == found[1]), None)
    return (command, found[2].strip()) if command is not None else None


def prepare(
    text: str,
    commands: Sequence[CustomCommand],
    root: Path,
    *,
    may_read: Callable[[str], bool] | None = None,
) -> ExpandedPrompt | None:
    """``text`` expanded when it runs a custom command (``/name args``); else None."""
    found = match(text, commands)
    if found is None:
        return None
    return expand(found[0], found[1], root, may_read=may_read)


def read_rule(policy: PermissionPolicy, mode: ApprovalMode) -> Callable[[str], bool]:
    """Whether an ``@path`` may be included: not when a read deny rule covers it."""

    def may_read(path: str) -> bool:
        return policy.decide(mode, "read_file", "read", {"path": path}).verdict != "deny"

    return may_read


def expand(
    command: CustomCommand,
    args: str,
    root: Path,
    *,
    may_read: Callable[[str], bool] | None = None,
) -> ExpandedPrompt:
    """The prompt of ``command`` run with ``args`` in workspace ``root``.

    ``may_read`` can refuse an ``@path`` (the permission rules' read denials)."""
    try:
        words = shlex.split(args)
    except ValueError:
        words = args.split()
    body = command.body
    uses_args = "$ARGUMENTS" in body or re.search(_POSITIONAL, body) is not None
    text = body.replace("$ARGUMENTS", args)
    text = re.sub(
        _POSITIONAL, lambda m: words[int(m[1]) - 1] if int(m[1]) <= len(words) else "", text
    )
    if args and not uses_args:
        text += f"\n\nARGUMENTS: {args}"
    text, notes = _include_files(text, Workspace(root), may_read)
    return ExpandedPrompt(command.name, text, command.allowed_tools, tuple(notes))


def _include_files(
    text: str, workspace: Workspace, may_read: Callable[[str], bool] | None
) -> tuple[str, list[str]]:
    """Append the text of each ``@path`` the prompt names (once each)."""
    blocks: list[str] = []
    notes: list[str] = []
    seen: set[str] = set()
    for given in re.findall(_INCLUDE, text):
        if given in seen:
            continue
        seen.add(given)
        try:
            path = workspace.resolve(given)
        except WorkspaceError as exc:
            notes.append(f"@{given} was not included: {exc}.")
            continue
        if not path.is_file():
            if not path.exists():
                notes.append(f"@{given} was not included: there is no such file.")
            continue  # a directory or an @mention: left as written
        if may_read is not None and not may_read(given):
            notes.append(f"@{given} was not included: a deny rule covers it.")
            continue
        try:
            data = path.read_bytes()[:MAX_INCLUDE_BYTES]
        except OSError as exc:
            notes.append(f"@{given} was not included: it cannot be read ({exc.strerror}).")
            continue
        if b"\x00" in data:
            notes.append(f"@{given} was not included: it is a binary file.")
            continue
        content = data.decode("utf-8", errors="replace").rstrip("\n")
        blocks.append(f'<file path="{workspace.relative(path)}">\n{content}\n</file>')
    if blocks:
        text += "\n\n" + "\n\n".join(blocks)
    return text, notes
