"""The prefix an "allow for this session" answer may remember for one program's words.

A program's name alone often says what it will do (``make``, ``git log``); for a
shell, ``sudo`` or an interpreter it says nothing, since ``python3 *`` would allow
``python3 -c ANYTHING``. An interpreter running a named module (``python3 -m
pytest``) is different: the module says what runs, and the rules can express it
word by word, so that prefix is offered (never for the modules that run code
given on their command line).
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Sequence

from clover_code.agent.permissions.approval import SUBCOMMAND_TOOLS, command_prefix

__all__ = ["command_session_prefix", "session_rule_prefix"]

_NO_SESSION_RULE = frozenset(
    {"bash", "sh", "zsh", "dash", "ksh", "ash", "eval", "exec", "source", ".", "sudo", "doas"}
    | {"env", "xargs", "find", "node", "perl", "ruby", "npx", "uvx"}
)
"""Programs whose name alone says nothing about what they will do."""

_PYTHON = r"python(\d+(\.\d+)*)?\Z"  # patterns as text: compiled by ``re`` on first use
"""``python``, ``python3``, ``python3.12``: the interpreter under any of its names."""

_MODULE = r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*\Z"

_CODE_RUNNING_MODULES = frozenset({"runpy", "timeit", "trace", "pdb", "cProfile", "profile"})
"""Modules that run code, a file or a module given in their arguments."""


def session_rule_prefix(argv: Sequence[str]) -> str | None:
    """What "allow for this session" covers for a program run with ``argv``: its name
    (and sub-command), ``python3 -m MODULE`` for an interpreter running a module, or
    None when no safe prefix exists."""
    name = os.path.basename(argv[0])
    if re.match(_PYTHON, name):
        return _module_prefix(argv)
    if name in _NO_SESSION_RULE:
        return None
    return command_prefix(shlex.join(argv))


def _module_prefix(argv: Sequence[str]) -> str | None:
    """``python3 -m pytest`` (``python3 -m pip install``) for ``python3 -m pytest -q``;
    None for any other way of starting the interpreter."""
    if len(argv) < 3 or argv[1] != "-m" or not re.match(_MODULE, argv[2]):
        return None
    module = argv[2]
    if module.split(".")[0] in _CODE_RUNNING_MODULES or module == "code":
        return None
    words = [argv[0], "-m", module]
    if module in SUBCOMMAND_TOOLS and len(argv) > 3 and not argv[3].startswith("-"):
        words.append(argv[3])
    return shlex.join(words)


def command_session_prefix(command: str) -> str | None:
    """What "allow for this session" would cover for the command line ``command``,
    e.g. ``git status`` or ``cd && pytest``; None when no safe prefix exists (wrappers
    that add power, interpreters not running a named module, programs only known at
    run time)."""
    # The shell parser (tree-sitter and its tables) loads with the first command.
    from clover_code.agent.permissions.shell.parse import parse_shell

    parsed = parse_shell(command)
    if parsed.problem is not None or parsed.opaque is not None or not parsed.commands:
        return None
    prefixes: list[str] = []
    for cmd in parsed.commands:
        program = cmd.program
        if program.dynamic or any(not layer.transparent for layer in cmd.layers[:-1]):
            return None
        prefix = session_rule_prefix(program.argv)
        if prefix is None or "&&" in prefix:
            return None
        prefixes.append(prefix)
    return " && ".join(dict.fromkeys(prefixes))
