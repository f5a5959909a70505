"""The drivers and submodules a repository's own config defines, as settings that
switch them off.

Filter drivers (``filter.<name>.clean/smudge/process``) and merge drivers
(``merge.<name>.driver``) that the repository's config, or a file it includes,
defines are programs git would run; so are those of every repository nested in
its work tree (``git/nested.py``). ``repo_driver_overrides`` lists ``-c``
settings that empty each of them, and pins every submodule's ``ignore`` to
``all``; it reads the config with ``git config --list``, which runs no program.
A name that cannot be given on git's command line is refused
(``UnsafeRepository``). Every harness git command carries these
(``git/safe.py``).
"""

from __future__ import annotations

import subprocess
from collections.abc import Mapping
from pathlib import Path

from clover_code.errors import CloverError
from clover_code.fs.stamps import Remembered, stamps
from clover_code.git.hardening import (
    HARDENING_CONFIG,
    HARDENING_ENV,
    config_args,
    git_env,
    location_args,
)
from clover_code.git.nested import Nested, drivers_of, nested_repositories

__all__ = ["UnsafeRepository", "repo_driver_overrides"]

_DRIVER_KEYS = {
    "filter": {"clean": "", "smudge": "", "process": "", "required": "false"},
    "merge": {"driver": ""},
}
_REPO_SCOPES = {"local", "worktree"}


class UnsafeRepository(CloverError):
    """The repository's config defines something git cannot be told to ignore."""


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
    argv = [git, *location_args(git_dir, None), "config", "--list", "--show-scope"]
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

_GIT_VARIABLES = {*HARDENING_ENV, "GIT_INDEX_FILE"}
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
    command = [git, *config_args(HARDENING_CONFIG)]
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
