"""Where a parsed command line writes, and whether it only reads.

``write_paths`` turns each write of a ``ParsedShell`` into the absolute paths
it may land on: relative targets are taken from every directory a ``cd`` in
the line may have moved to (links resolved), ``~`` is expanded, and a target
or ``cd`` known only at run time gives None (unknown). The permission check
then asks about any path outside the workspace, whatever the rules say.

``read_only`` is True only for a fully understood line (no problem, nothing
opaque, no writes at all, no wrapper that adds power) whose every program is
one that only reads: a line with a write redirection is never read-only.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from clover_code.agent.permissions.shell.parse import ParsedShell, Write

__all__ = ["READ_ONLY_PROGRAMS", "read_only", "write_paths"]

MAX_DIRECTORIES = 64
"""More possible working directories than this is too many to follow."""

READ_ONLY_PROGRAMS = frozenset(
    {"ls", "cat", "head", "tail", "wc", "grep", "egrep", "fgrep", "rg", "pwd", "echo"}
    | {"printf", "true", "false", ":", "which", "type", "stat", "du", "df", "basename"}
    | {"dirname", "realpath", "readlink", "date", "whoami", "id", "uname", "printenv"}
    | {"diff", "cmp", "cut", "tr", "nl", "sort", "uniq", "column", "test", "[", "sed"}
    | {"awk", "find", "git", "cd", "env", "file", "md5sum", "sha256sum", "tac", "rev"}
)
_GIT_READ = frozenset(
    {"status", "diff", "log", "show", "rev-parse", "ls-files", "blame", "grep", "describe"}
    | {"shortlog", "cat-file", "ls-tree", "merge-base", "rev-list"}
)
_FIND_ACTS = frozenset({"-exec", "-execdir", "-ok", "-okdir", "-delete"})


def _directories(chdirs: Iterable[str | None], root: Path) -> list[str] | None:
    """Every directory the line's commands may run in; None when unknown."""
    targets = list(chdirs)
    if None in targets:
        return None
    found = {str(root)}
    # A cd inside a loop may run many times: follow cd after cd until nothing new
    # comes or a directory outside the workspace shows up (that already decides).
    for _ in range(len(targets) + 1):
        grown = set(found)
        for target in targets:
            assert target is not None
            for base in found:
                grown.add(os.path.realpath(os.path.join(base, os.path.expanduser(target))))
        if len(grown) > MAX_DIRECTORIES:
            return None
        if grown == found or any(not Path(d).is_relative_to(root) for d in grown):
            return sorted(grown)
        found = grown
    return sorted(found)


def write_paths(parsed: ParsedShell, root: Path) -> list[tuple[Write, list[str] | None]]:
    """Each write with the paths it may land on, absolute or relative to ``root``
    (None: only known at run time)."""
    directories = _directories(parsed.chdirs, root)
    result: list[tuple[Write, list[str] | None]] = []
    for write in parsed.writes:
        if write.target is None:
            result.append((write, None))
            continue
        target = os.path.expanduser(write.target)
        if os.path.isabs(target):
            result.append((write, [target]))
        elif directories is None:
            result.append((write, None))
        elif directories == [str(root)]:
            result.append((write, [target]))  # as written: relative to the workspace
        else:
            result.append((write, [os.path.join(d, target) for d in directories]))
    return result


def read_only(parsed: ParsedShell) -> bool:
    """Whether the line is fully understood and every program in it only reads."""
    if parsed.problem or parsed.opaque or parsed.writes or not parsed.commands:
        return False
    for cmd in parsed.commands:
        if any(layer.dynamic for layer in cmd.layers):
            return False
        if any(not layer.transparent for layer in cmd.layers[:-1]):
            return False
        argv = cmd.program.argv
        name = os.path.basename(argv[0])
        if name not in READ_ONLY_PROGRAMS:
            return False
        if name == "git" and (len(argv) < 2 or argv[1] not in _GIT_READ):
            return False
        if name == "find" and any(a in _FIND_ACTS or a.startswith("-f") for a in argv[1:]):
            return False
        if name == "uniq" and len([a for a in argv[1:] if not a.startswith("-")]) > 1:
            return False
        if name == "env" and len(argv) > 1:
            return False
    return True
