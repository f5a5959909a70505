"""The workspace files a configured host command names, and their fingerprints.

A program the host runs for the user (a hook, an MCP stdio server) whose
executable or script lies in the workspace can be rewritten by anything that
writes the workspace: the agent's shell in a sandbox, its file tools, the
repository's author. So trust must cover those files' bytes, not only the
config that names them.

``words`` is deliberately generous (every token of the command, quoted or
not, ``bash -c`` bodies included): it decides what the trust fingerprint
covers, and covering a file too many only makes trust stricter. The exact
check before each run (``clover_code.agent.extensions.host_programs``) reads the command
with the shell parser and refuses any workspace file this fingerprint missed.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Iterable, Mapping
from pathlib import Path

__all__ = [
    "CONTROL_PATHS",
    "file_digest",
    "fingerprint",
    "host_program",
    "inside",
    "on_path",
    "resolve_word",
    "snapshot",
    "words",
    "workspace_files",
]

CONTROL_PATHS: tuple[str, ...] = (".clover", ".mcp.json", ".agents", ".devcontainer", ".claude")
"""The project's control files and folders (workspace-relative): what configures
clover-code, its skills, agents, hooks and sandbox image. Sandboxes mount them
read-only."""

_TOKEN = re.compile(r"[^\s'\"`;|&()<>]+")


def words(command: str) -> list[str]:
    """Every token of ``command``, quotes ignored (so ``bash -c '...'`` bodies count)."""
    found: list[str] = []
    for token in _TOKEN.findall(command):
        found.append(token)
        _, eq, value = token.partition("=")
        if eq and value:
            found.append(value)  # --config=tools/x.toml, VAR=./x
    return found


def inside(path: str | os.PathLike[str], root: Path) -> bool:
    """Whether ``path`` (resolved, links followed) lies in the workspace ``root``."""
    real = os.path.realpath(path)
    top = os.path.realpath(root)
    return real == top or real.startswith(top.rstrip("/") + "/")


def workspace_rel(path: Path, root: Path) -> str | None:
    """``path`` relative to the workspace when it lies there (None: outside).

    A link inside the workspace counts even when it points outside: whoever
    writes the workspace can point it elsewhere. A file reached through a link
    is named by where it really is.
    """
    top = os.path.realpath(root)
    real = os.path.realpath(path)
    if inside(real, Path(top)):
        return os.path.relpath(real, top)
    lexical = os.path.join(os.path.realpath(os.path.dirname(os.path.abspath(path))), path.name)
    if lexical.startswith(top.rstrip("/") + "/"):
        return os.path.relpath(lexical, top)
    return None


def on_path(name: str, path_env: str, *, skip_inside: Path | None = None) -> Path | None:
    """Where ``PATH`` lookup finds the program ``name`` (None: nowhere).

    ``skip_inside``: entries inside this folder are not searched.
    """
    for entry in path_env.split(os.pathsep):
        if not entry or not os.path.isabs(entry):
            continue  # an empty or relative entry is the current folder: the workspace
        if skip_inside is not None and inside(entry, skip_inside):
            continue
        candidate = Path(entry) / name
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return candidate
    return None


def host_program(name: str, workspace: Path) -> str | None:
    """Where the host finds program ``name`` on its ``PATH``, never inside the
    workspace (an activated ``.venv/bin`` there holds whatever the repository
    put in it); None when it is found nowhere else."""
    found = on_path(name, os.environ.get("PATH", os.defpath), skip_inside=workspace)
    return str(found) if found is not None else None


def resolve_word(word: str, cwd: Path, path_env: str, *, program: bool) -> Path | None:
    """The file ``word`` names when run from ``cwd`` (a program name without a
    slash is looked up in ``path_env``), or None when it names no file."""
    if not word or (word.startswith("-") and not program):
        return None
    if program and "/" not in word:
        return on_path(word, path_env)
    candidate = Path(word) if os.path.isabs(word) else cwd / word
    try:
        return candidate if candidate.is_file() else None
    except OSError:
        return None


def workspace_files(command: str, root: Path, path_env: str, cwd: Path | None = None) -> list[str]:
    """The workspace files (relative to ``root``, links resolved) any word of
    ``command`` may name, sorted."""
    top = Path(os.path.realpath(root))
    here = cwd or top
    found: set[str] = set()
    for word in words(command):
        for program in (True, False):
            named = resolve_word(word, here, path_env, program=program)
            rel = workspace_rel(named, top) if named is not None else None
            if rel is not None:
                found.add(rel)
    return sorted(found)


def file_digest(path: Path) -> str | None:
    """The sha256 of a file's bytes (None: it cannot be read)."""
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return None


def snapshot(root: Path, rels: Iterable[str]) -> dict[str, str]:
    """Each workspace file's sha256 now (unreadable ones are left out)."""
    top = Path(os.path.realpath(root))
    taken: dict[str, str] = {}
    for rel in rels:
        value = file_digest(top / rel)
        if value is not None:
            taken[rel] = value
    return taken


def fingerprint(scripts: Mapping[str, str]) -> bytes:
    """The bytes a trust digest adds for these named scripts (rel -> sha256)."""
    return b"".join(f"{rel}\0{sha}\n".encode() for rel, sha in sorted(scripts.items()))
