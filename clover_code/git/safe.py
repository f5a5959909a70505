"""Run git on the host without letting the repository run programs.

The agent can write anything inside the workspace, ``.git`` included (in the
sandbox or through a bug), so every git command the harness itself runs on the
host treats the repository's own configuration as untrusted. What is switched
off, and how:

- hooks: ``core.hooksPath=/dev/null`` (no ``pre-commit``, ``post-checkout``...);
- ``core.fsmonitor=false`` (a configured monitor is a program git runs);
- filter drivers (``filter.<name>.clean/smudge/process``) and merge drivers
  (``merge.<name>.driver``) that the repository's config, or a file it
  includes, defines are emptied: git then runs no program for them (filters
  are skipped; a merge through such a driver fails instead of running it).
  Drivers the user configured globally (git-lfs, say) keep working unless the
  repository redefines them;
- external diff and textconv programs (``diff.external``,
  ``diff.<name>.command``, ``diff.<name>.textconv``): ``--no-ext-diff`` and
  ``--no-textconv`` are added to ``diff``, ``log``, ``show``, ``whatchanged``,
  ``stash show``, and ``--no-textconv`` to ``blame``/``annotate`` (an empty
  value is not a way to switch these off: git then fails to run "");
- signing and its programs (``commit.gpgSign``, ``tag.gpgSign``,
  ``log.showSignature``, ``gpg.*program``), ``core.sshCommand`` (plain
  ``ssh``), ``credential.helper`` (none), ``core.askPass``, the ``ext::``
  transport, pagers and editors (``GIT_PAGER=cat``, ``GIT_EDITOR=:``);
- nested repositories: submodules are never entered, so no program their
  own config names (a filter, an fsmonitor) can run: ``--ignore-submodules=all``
  is added to ``status`` and every diff-family command (a submodule's own
  ``ignore`` setting cannot override it, unlike ``diff.ignoreSubmodules``),
  and ``submodule.recurse``, ``diff.submodule``, ``status.submoduleSummary``
  and ``fetch.recurseSubmodules`` are pinned off, and every submodule named in
  ``.gitmodules`` or the config gets ``submodule.<name>.ignore=all`` (for
  ``commit``, which takes no flag for it). Where git enters a submodule
  anyway (``git add`` does), the filter and merge drivers of every nested
  repository are emptied as well as the top one's (``git_nested``). A plain nested repository
  that is not a submodule is only ever listed as an untracked directory;
- ``core.worktree``: when the directory holds a ``.git`` directory, git is
  given ``--git-dir`` and ``--work-tree`` explicitly, so a planted
  ``core.worktree`` cannot point it at files outside the workspace;
- the environment: every inherited ``GIT_*`` variable is dropped, the system
  config is skipped (``GIT_CONFIG_NOSYSTEM=1``), replace refs are ignored and
  git never prompts.

``run_git`` runs one command; ``git_argv``/``git_env`` build the pieces for an
asyncio subprocess; ``safe_repo`` opens a GitPython ``Repo`` whose git
commands carry the same hardening and whose ``index.commit`` never runs hooks.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from clover_code.errors import CloverError
from clover_code.fs.named_files import host_program
from clover_code.fs.stamps import Remembered, stamps
from clover_code.git.nested import Nested, drivers_of, nested_repositories

if TYPE_CHECKING:
    from git import Repo

__all__ = [
    "HARDENING_CONFIG",
    "UnsafeRepository",
    "git_argv",
    "git_env",
    "last_line",
    "repo_driver_overrides",
    "run_git",
    "safe_repo",
]

HARDENING_CONFIG: tuple[tuple[str, str], ...] = (
    ("core.hooksPath", "/dev/null"),
    ("core.fsmonitor", "false"),
    ("core.sshCommand", "ssh"),
    ("core.askPass", ""),
    ("core.pager", "cat"),
    ("credential.helper", ""),
    ("protocol.ext.allow", "never"),
    ("commit.gpgSign", "false"),
    ("tag.gpgSign", "false"),
    ("push.gpgSign", "false"),
    ("log.showSignature", "false"),
    ("gpg.program", "gpg"),
    ("gpg.ssh.program", "ssh-keygen"),
    ("gpg.x509.program", "gpgsm"),
    ("submodule.recurse", "false"),
    ("diff.ignoreSubmodules", "all"),
    ("diff.submodule", "short"),
    ("status.submoduleSummary", "false"),
    ("fetch.recurseSubmodules", "false"),
)
"""``-c`` settings given to every harness git command (command-line scope wins)."""

_ENV = {
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_ATTR_NOSYSTEM": "1",
    "GIT_NO_REPLACE_OBJECTS": "1",
    "GIT_TERMINAL_PROMPT": "0",
    "GIT_PAGER": "cat",
    "GIT_EDITOR": ":",
    "GIT_SEQUENCE_EDITOR": ":",
}

_DIFF_COMMANDS = {"diff", "log", "show", "whatchanged"}
_TEXTCONV_ONLY = {"blame", "annotate"}
_NO_SUBMODULES = {"status", "diff-files", "diff-index", "diff-tree"}
"""Commands that take ``--ignore-submodules`` besides the ``_DIFF_COMMANDS``."""
_DRIVER_KEYS = {
    "filter": {"clean": "", "smudge": "", "process": "", "required": "false"},
    "merge": {"driver": ""},
}
_REPO_SCOPES = {"local", "worktree"}


def last_line(text: str) -> str:
    """The last non-empty line of git's stderr, for a one-sentence error."""
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return lines[-1].rstrip(".") if lines else "no message"


class UnsafeRepository(CloverError):
    """The repository's config defines something git cannot be told to ignore."""


def git_env(base: Mapping[str, str] | None = None) -> dict[str, str]:
    """``base`` (default: this process's environment) without ``GIT_*``, plus the hardening."""
    source = os.environ if base is None else base
    env = {k: v for k, v in source.items() if not k.startswith("GIT_")}
    env.update(_ENV)
    return env


def _locate(
    cwd: Path, git_dir: Path | None, work_tree: Path | None
) -> tuple[Path | None, Path | None]:
    """Explicit git dir and work tree: given ones, else ``cwd/.git`` when it is a directory."""
    if git_dir is None and (cwd / ".git").is_dir() and not (cwd / ".git").is_symlink():
        git_dir = cwd / ".git"
        work_tree = work_tree or cwd
    return git_dir, work_tree


def _location_args(git_dir: Path | None, work_tree: Path | None) -> list[str]:
    args = []
    if git_dir is not None:
        args.append(f"--git-dir={git_dir}")
    if work_tree is not None:
        args.append(f"--work-tree={work_tree}")
    return args


def repo_driver_overrides(
    cwd: Path,
    *,
    git_dir: Path | None = None,
    work_tree: Path | None = None,
    env: Mapping[str, str] | None = None,
    git: str = "git",
) -> list[tuple[str, str]]:
    """Settings that empty every filter and merge driver the repository itself configures,
    or any repository nested in its work tree (``git_nested``).

    Reads the config with ``git config --list`` (which runs no program); a
    driver counts as the repository's when any of its keys comes from the
    local or worktree config or a file they include.

    The answer is remembered while every file it was read from stays as it
    was (``_read_from``, ``fs/stamps.py``): a session's checkpoints ask for
    the same repositories again and again. A config with includes, or a
    repository with others nested in it, is read afresh every time.
    """
    run_env = dict(env) if env is not None else git_env()
    sources = _read_from(cwd, git_dir, run_env)
    taken = stamps(sources) if sources is not None else None
    remembered_as = (git, cwd, git_dir, work_tree, *sorted(run_env.items()))
    if taken is not None and (known := _REMEMBERED.get(remembered_as, taken)) is not None:
        return list(known)
    overrides, plain = _read_overrides(cwd, git_dir, work_tree, run_env, git)
    if taken is not None and plain:
        _REMEMBERED.put(remembered_as, taken, tuple(overrides))
    return overrides


def _read_overrides(
    cwd: Path, git_dir: Path | None, work_tree: Path | None, env: Mapping[str, str], git: str
) -> tuple[list[tuple[str, str]], bool]:
    """``repo_driver_overrides`` read now, and whether they came from the files
    ``_read_from`` names alone (no include, no nested repository)."""
    argv = [git, *_location_args(git_dir, None), "config", "--list", "--show-scope"]
    argv += ["--name-only", "-z", "--includes"]
    code, fields = _config_listing(argv, cwd, env)
    if code != 0:
        return [], False  # not a repository (yet): there is no repository config to distrust
    drivers: set[tuple[str, str]] = set()
    submodules = _gitmodules_names(cwd, env=env, git=git)
    plain = True
    for scope, key in zip(fields[::2], fields[1::2], strict=False):
        if (submodule := _submodule_name(key)) is not None:
            submodules.add(submodule)
        section, _, rest = key.partition(".")
        section = section.lower()
        plain = plain and section not in ("include", "includeif")
        if scope not in _REPO_SCOPES or section not in _DRIVER_KEYS or "." not in rest:
            continue
        name = rest.rpartition(".")[0]
        _check_name(section, name)
        drivers.add((section, name))
    nested, found = _nested(cwd, git_dir, work_tree, env, git)
    for section, name in found:
        _check_name(section, name)
        drivers.add((section, name))
    overrides = []
    for section, name in sorted(drivers):
        for var, value in _DRIVER_KEYS[section].items():
            overrides.append((f"{section}.{name}.{var}", value))
    for name in sorted(submodules):
        # A submodule's own `ignore` setting would win over diff.ignoreSubmodules.
        _check_name("submodule", name)
        overrides.append((f"submodule.{name}.ignore", "all"))
    return overrides, plain and not nested.stores and not nested.gitlinks


_REMEMBERED: Remembered[tuple[tuple[str, str], ...]] = Remembered(64)
"""``repo_driver_overrides`` by repository, work tree and environment."""

_GIT_VARIABLES = {*_ENV, "GIT_INDEX_FILE"}
"""The git variables whose meaning ``_read_from`` knows (the hardening's, the index)."""


def _read_from(cwd: Path, git_dir: Path | None, env: Mapping[str, str]) -> list[Path] | None:
    """Every file the driver overrides are read from (besides what they include, and the
    repositories nested in this one, which make them read afresh), or None when that is
    not known: git finds the repository itself, reads the system config, or is told
    more by the environment."""
    if git_dir is None or not all(k in _GIT_VARIABLES for k in env if k.startswith("GIT_")):
        return None
    git_dir = cwd / git_dir  # a relative path is git's, and git runs in cwd
    if env.get("GIT_CONFIG_NOSYSTEM") != "1" or (git_dir / "commondir").exists():
        return None  # the system config, or a linked worktree's (the common dir's config)
    home = cwd / Path(env.get("HOME") or "~").expanduser()
    xdg = cwd / (env.get("XDG_CONFIG_HOME") or home / ".config")
    return [
        xdg / "git" / "config",
        home / ".gitconfig",
        git_dir / "config",
        git_dir / "config.worktree",
        cwd / (env.get("GIT_INDEX_FILE") or git_dir / "index"),  # gitlinks: nested ones
        git_dir / "modules",
        cwd / ".gitmodules",
    ]


def _nested(
    cwd: Path,
    git_dir: Path | None,
    work_tree: Path | None,
    env: Mapping[str, str],
    git: str,
) -> tuple[Nested, set[tuple[str, str]]]:
    """The repositories nested in this one's work tree, and their drivers."""
    command = [git, *_config_args(HARDENING_CONFIG)]
    if git_dir is None:  # found by git itself (a `.git` file, or cwd below the top)
        argv = [*command, "rev-parse", "--absolute-git-dir", "--show-toplevel"]
        proc = subprocess.run(argv, cwd=cwd, env=dict(env), capture_output=True, timeout=30)
        lines = proc.stdout.decode("utf-8", "surrogateescape").splitlines()
        if proc.returncode != 0 or not lines:
            return Nested([], 0), set()  # not a repository, or a bare one (no work tree)
        git_dir = Path(lines[0])
        work_tree = work_tree or (Path(lines[1]) if len(lines) > 1 else None)
    nested = nested_repositories(command, git_dir, work_tree, env)
    return nested, drivers_of(command, nested.stores, env)


def _check_name(section: str, name: str) -> None:
    """Refuse a name that cannot be given on git's command line (``-c key=value``)."""
    if "=" in name or "\n" in name:
        msg = (
            f"the repository defines a {section} named {name!r}, which clover-code "
            "cannot switch off; rename or remove it (in .git/config or .gitmodules)."
        )
        raise UnsafeRepository(msg)


def _gitmodules_names(cwd: Path, *, env: Mapping[str, str] | None, git: str) -> set[str]:
    """Submodule names in the work tree's ``.gitmodules`` (read as a plain config file)."""
    path = cwd / ".gitmodules"
    if not path.is_file() or path.is_symlink():
        return set()
    argv = [git, "config", "--file", str(path), "--list", "--name-only", "-z"]
    _, keys = _config_listing(argv, cwd, env)
    return {name for key in keys if (name := _submodule_name(key)) is not None}


def _config_listing(
    argv: list[str], cwd: Path, env: Mapping[str, str] | None
) -> tuple[int, list[str]]:
    """Run a ``git config --list -z`` (which runs no program); its exit status and the
    fields it printed."""
    proc = subprocess.run(
        argv,
        cwd=cwd,
        env=dict(env) if env is not None else git_env(),
        capture_output=True,
        timeout=30,
        check=False,
    )
    return proc.returncode, proc.stdout.decode("utf-8", "surrogateescape").split("\0")


def _submodule_name(key: str) -> str | None:
    """The submodule a config key is about (``submodule.NAME.url``: NAME), if any."""
    section, _, rest = key.partition(".")
    if section.lower() == "submodule" and "." in rest:
        return rest.rpartition(".")[0]
    return None


_TAKES_VALUE = {"-c", "-C", "--git-dir", "--work-tree", "--namespace", "--exec-path"}


def _subcommand_at(args: Sequence[str]) -> int:
    """The index of the subcommand in ``args``, past any global options (-c k=v, -C dir...)."""
    i = 0
    while i < len(args) and args[i].startswith("-"):
        i += 2 if args[i] in _TAKES_VALUE else 1
    return i


def _with_safe_flags(args: Sequence[str]) -> list[str]:
    """``args`` with the flags that stop external diff and textconv programs and
    keep git out of submodules."""
    out = list(args)
    i = _subcommand_at(out)
    if i >= len(out):
        return out
    diff_flags = ["--no-ext-diff", "--no-textconv", "--ignore-submodules=all"]
    if out[i] in _DIFF_COMMANDS:
        return [*out[: i + 1], *diff_flags, *out[i + 1 :]]
    if out[i] in _NO_SUBMODULES:
        return [*out[: i + 1], "--ignore-submodules=all", *out[i + 1 :]]
    if out[i] in _TEXTCONV_ONLY:
        return [*out[: i + 1], "--no-textconv", *out[i + 1 :]]
    if out[i] == "stash" and i + 1 < len(out) and out[i + 1] == "show":
        return [*out[: i + 2], *diff_flags, *out[i + 2 :]]
    return out


def _config_args(settings: Sequence[tuple[str, str]]) -> list[str]:
    args: list[str] = []
    for key, value in settings:
        args += ["-c", f"{key}={value}"]
    return args


def git_argv(
    args: Sequence[str],
    *,
    cwd: Path,
    git_dir: Path | None = None,
    work_tree: Path | None = None,
    env: Mapping[str, str] | None = None,
    git: str = "git",
    drivers: Sequence[tuple[str, str]] | None = None,
) -> list[str]:
    """The full hardened command line for ``git args`` run in ``cwd``.

    Run it with ``cwd=cwd`` and ``env=git_env()``. ``git_dir``/``work_tree``
    name a separate git store (a shadow checkpoint repository, say).
    ``drivers`` are the ``repo_driver_overrides`` when the caller has them
    already (worked out for the same repository and work tree).
    """
    git_dir, work_tree = _locate(cwd, git_dir, work_tree)
    if git == "git":  # never a git the repository put on PATH (an activated .venv/bin)
        git = host_program("git", work_tree or cwd) or git
    if drivers is None:
        drivers = repo_driver_overrides(cwd, git_dir=git_dir, work_tree=work_tree, env=env, git=git)
    return [
        git,
        *_config_args(HARDENING_CONFIG),
        *_config_args(drivers),
        *_location_args(git_dir, work_tree),
        *_with_safe_flags(args),
    ]


def run_git(
    *args: str,
    cwd: Path,
    git_dir: Path | None = None,
    work_tree: Path | None = None,
    input: str | None = None,
    check: bool = True,
    timeout: float = 120.0,
    index: Path | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run one hardened git command and return its result (text, UTF-8, errors replaced).

    ``index``: an index file to use instead of the repository's own.
    Raises ``subprocess.CalledProcessError`` when ``check`` and git fails.
    """
    env = git_env()
    if index is not None:
        env["GIT_INDEX_FILE"] = str(index)
    argv = git_argv(args, cwd=cwd, git_dir=git_dir, work_tree=work_tree, env=env)
    return subprocess.run(
        argv,
        cwd=cwd,
        env=env,
        input=input,
        capture_output=True,
        text=True,
        encoding="utf-8",
        errors="replace",
        timeout=timeout,
        check=check,
    )


def safe_repo(path: Path) -> Repo:
    """A GitPython ``Repo`` at ``path`` whose git commands are hardened as above.

    Each command it runs gets the hardening settings, the driver overrides read
    afresh, explicit ``--git-dir``/``--work-tree`` (so a planted
    ``core.worktree`` is ignored, as GitPython itself ignores it), the safe
    diff flags and the cleaned environment. Its ``index.commit`` never runs
    hooks (GitPython runs them itself, reading ``.git/hooks`` directly);
    ``index.add`` writes blobs in Python and runs no filter.
    """
    import git

    class _HardenedGit(git.Git):
        location: tuple[str, ...] = ()

        def _call_process(self, method: str, *args: Any, **kwargs: Any) -> Any:
            name = method.replace("_", "-")
            tree = Path(self._working_dir or ".")
            settings = [*HARDENING_CONFIG, *repo_driver_overrides(tree)]
            self._persistent_git_options = [*_config_args(settings), *self.location]
            cleared = {k: None for k in os.environ if k.startswith("GIT_") and k not in _ENV}
            self.update_environment(**cleared, **_ENV)
            safe = _with_safe_flags([name, *map(str, args)])
            return super()._call_process(method, *safe[1:], **kwargs)

    class _HookFreeIndex(git.IndexFile):
        def commit(self, *args: Any, **kwargs: Any) -> Any:
            kwargs["skip_hooks"] = True
            return super().commit(*args, **kwargs)

    class _HardenedRepo(git.Repo):
        GitCommandWrapperType = _HardenedGit

        @property
        def index(self) -> git.IndexFile:
            return _HookFreeIndex(self)

    repo = _HardenedRepo(path)
    command = repo.git
    if repo.working_tree_dir is not None and isinstance(command, _HardenedGit):
        command.location = (f"--git-dir={repo.git_dir}", f"--work-tree={repo.working_tree_dir}")
    return repo
