"""The check before the host runs a configured program (a hook, an MCP stdio server).

Whatever writes the workspace (the agent's shell, sandboxed or not, its file
tools, the repository's author) can rewrite a file there, so a program the
host runs for the user must not be one the workspace controls, unless the
user trusted that exact content:

- the command is read with the shell parser (``shell_parse``): every word of
  every program it runs (wrappers and ``bash -c`` bodies included) that names
  a file in the workspace must be one of the scripts the trusted project
  files named, with the bytes they had then (``TrustReport.trusted_scripts``);
  one changed byte and it does not run, and the refusal names the file;
- a command the parser does not fully understand is refused: it starts in
  the workspace, so what the parser cannot follow may read it;
- relative program paths and script arguments resolve against the user's
  config folder first (``./scripts/policy-check`` in the user config is
  ``~/.config/clover-code/scripts/policy-check``), a program name is looked
  up in ``PATH`` without the entries inside the workspace (``.venv/bin``,
  ``node_modules/.bin``), and those entries are left out of the program's
  ``PATH`` too. A relative program or script found in neither place is
  refused: it would be whatever the workspace holds when it runs.
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from clover_code.fs.named_files import file_digest, inside, on_path, workspace_rel
from clover_code.tools.mcp_config import DeclaredServer

__all__ = ["HostPrograms", "Prepared", "Refused", "checked_servers"]

_INTERPRETER = (
    r"(?:ba|da|z|k|fi|c|tc)?sh|python[0-9.]*|pypy[0-9.]*|node(?:js)?|deno|bun|ruby|perl"
    r"|php|lua[0-9.]*|Rscript|tsx|ts-node|pwsh"
)
"""Programs whose first operand is a script they read and run (compiled by ``re`` on first
use: most sessions run no host program)."""
_INLINE = frozenset({"-c", "-e", "-m", "--eval", "-E"})
"""Options after which the program's text is an argument, not a file operand."""


@dataclass(frozen=True, slots=True)
class Prepared:
    """A command that may run: its argv (resolved) and the ``PATH`` to give it."""

    argv: list[str]
    path_env: str


@dataclass(frozen=True, slots=True)
class Refused:
    """A command that must not run, and why (one sentence naming the file)."""

    reason: str
    changed: str | None = None
    """The workspace file that changed since it was trusted, if that is why."""


@dataclass(frozen=True, slots=True)
class HostPrograms:
    """Checks the programs the host runs against what the user trusted."""

    root: Path
    trusted: dict[str, str] = field(default_factory=dict)
    """Workspace scripts as trusted: relative path -> sha256 (updated when the
    user trusts a changed script: ``script_retrust``)."""
    user_dir: Path | None = None
    """The user's config folder, where relative paths of user commands resolve."""
    path_env: str = field(default_factory=lambda: os.environ.get("PATH", os.defpath))

    def clean_path(self) -> str:
        """``PATH`` without its entries inside the workspace (or relative ones)."""
        kept = [
            entry
            for entry in self.path_env.split(os.pathsep)
            if entry and os.path.isabs(entry) and not inside(entry, self.root)
        ]
        return os.pathsep.join(kept)

    def prepare(self, argv: Sequence[str], cwd: Path | None = None) -> Prepared | Refused:
        """``argv`` resolved and checked, or why it must not run."""
        if not argv:
            return Refused("its command is empty")
        here = cwd or self.root
        path_env = self.clean_path()
        resolved = self._resolved(list(argv), path_env)
        if isinstance(resolved, Refused):
            return resolved
        from clover_code.agent.permissions.shell.parse import parse_shell

        parsed = parse_shell(shlex.join(resolved), script_files=True)
        # It starts in the workspace: what the parser cannot follow may read it.
        unclear = parsed.problem or parsed.opaque
        for command in parsed.commands:
            for layer in command.layers:
                if layer.dynamic:
                    unclear = unclear or "a program name known only at run time"
                for index, word in enumerate(layer.argv):
                    if index == 0 and layer.dynamic:
                        continue  # refused below: its name is only known at run time
                    found = self._named(word, here, path_env, program=index == 0)
                    if isinstance(found, Refused):
                        return found
            for problem in self._script_args(command.program.argv, here):
                return problem
        if unclear:
            return Refused(
                f"it runs in the workspace and its command cannot be fully checked ({unclear}); "
                "use a plain command with absolute paths"
            )
        return Prepared(resolved, path_env)

    def _resolved(self, argv: list[str], path_env: str) -> list[str] | Refused:
        """Relative program and script paths against the user's folder; the
        program looked up in ``PATH`` outside the workspace."""
        head = argv[0]
        if "/" not in head:
            # A program the workspace holds runs only as trusted (checked as named).
            found = on_path(head, path_env) or on_path(head, self.path_env)
            argv[0] = str(found) if found is not None else head
        elif not os.path.isabs(head):
            mine = self.user_dir / head if self.user_dir is not None else None
            if mine is not None and _is_file(mine):
                argv[0] = str(mine)
        interpreter = re.fullmatch(_INTERPRETER, os.path.basename(argv[0])) is not None
        for index, word in enumerate(argv[1:], start=1):
            if word.startswith("-") or os.path.isabs(word) or self.user_dir is None:
                continue
            mine = self.user_dir / word
            if _is_file(mine):
                argv[index] = str(mine)
            if interpreter:
                break  # the script; what follows is its own arguments
        return argv

    def _named(self, word: str, cwd: Path, path_env: str, *, program: bool) -> bool | Refused:
        """Whether ``word`` names a workspace file (then it must be as trusted)."""
        if program and "/" not in word:
            target = on_path(word, path_env)
        else:
            candidate = Path(word) if os.path.isabs(word) else cwd / word
            target = candidate if _is_file(candidate) else None
            if target is None and program and _relative_path(word):
                return Refused(
                    f"it names the program {word}, which is neither in your config folder nor "
                    "an existing file; give its absolute path"
                )
        rel = workspace_rel(target, self.root) if target is not None else None
        if rel is None:
            return False
        return self._as_trusted(rel)

    def _as_trusted(self, rel: str) -> bool | Refused:
        want = self.trusted.get(rel)
        now = file_digest(self.root / rel)
        if want is None:
            return Refused(
                f"it runs {rel} from the workspace, which your trust in this project does not "
                "cover; use a program outside the workspace, or trust the project's settings "
                "that name it"
            )
        if now != want:
            return Refused(
                f"{rel} changed since you trusted this project, so it was not run; review the "
                "change, then trust the project again",
                changed=rel,
            )
        return True

    def _script_args(self, argv: Sequence[str], cwd: Path) -> list[Refused]:
        """An interpreter's script that exists nowhere yet: the workspace could supply it."""
        if not argv or re.fullmatch(_INTERPRETER, os.path.basename(argv[0])) is None:
            return []
        if _INLINE & set(argv[1:]):
            return []  # the program's text is on the command line
        operands = [w for w in argv[1:] if not w.startswith("-")]
        if not operands or os.path.isabs(operands[0]):
            return []
        script = operands[0]
        if _is_file(cwd / script) or (cwd / script).is_dir():
            return []  # checked as a named file
        return [
            Refused(
                f"its script {script} is neither in your config folder nor an existing file; "
                "give its absolute path"
            )
        ]


def _is_file(path: Path) -> bool:
    try:
        return path.is_file()
    except OSError:  # a name too long, a loop of links
        return False


def _relative_path(word: str) -> bool:
    """Whether ``word`` looks like a relative path (it has a slash or a dot)."""
    return bool(word) and not os.path.isabs(word) and ("/" in word or word.startswith("."))


def checked_servers(
    servers: Sequence[DeclaredServer], programs: HostPrograms, root: Path, notes: list[str]
) -> list[DeclaredServer]:
    """The MCP servers that may start: each stdio server's command checked (and
    resolved) like a hook's; a refused one is left out with a sentence in ``notes``."""
    kept: list[DeclaredServer] = []
    for server in servers:
        config = server.config
        if config.type != "stdio" or not config.command:
            kept.append(server)
            continue
        cwd = root / config.cwd if config.cwd else root
        prepared = programs.prepare([config.command, *config.args], cwd)
        if isinstance(prepared, Refused):
            notes.append(f"MCP server '{server.name}' was not started: {prepared.reason}.")
            continue
        command, *args = prepared.argv
        update = {"command": command, "args": args}
        kept.append(replace(server, config=config.model_copy(update=update)))
    return kept
