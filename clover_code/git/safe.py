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

``run_git`` runs one command; ``git_argv`` and ``git_env`` build the pieces for an
asyncio subprocess; ``safe_repo`` opens a GitPython ``Repo`` whose git
commands carry the same hardening and whose ``index.commit`` never runs hooks.
The settings and the environment are ``git/hardening.py``'s; the drivers and
submodules a repository defines are read by ``git/repo_drivers.py``.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from clover_code.fs.named_files import host_program
from clover_code.git.hardening import (
    HARDENING_CONFIG,
    HARDENING_ENV,
    config_args,
    git_env,
    location_args,
)
from clover_code.git.repo_drivers import repo_driver_overrides

if TYPE_CHECKING:
    from git import Repo

__all__ = ["git_argv", "last_line", "run_git", "safe_repo"]

_DIFF_COMMANDS = {"diff", "log", "show", "whatchanged"}
_TEXTCONV_ONLY = {"blame", "annotate"}
_NO_SUBMODULES = {"status", "diff-files", "diff-index", "diff-tree"}
"""Commands that take ``--ignore-submodules`` besides the ``_DIFF_COMMANDS``."""


def last_line(text: str) -> str:
    """The last non-empty line of git's stderr, for a one-sentence error."""
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return lines[-1].rstrip(".") if lines else "no message"


def _locate(
    cwd: Path, git_dir: Path | None, work_tree: Path | None
) -> tuple[Path | None, Path | None]:
    """Explicit git dir and work tree: given ones, else ``cwd/.git`` when it is a directory."""
    if git_dir is None and (cwd / ".git").is_dir() and not (cwd / ".git").is_symlink():
        git_dir = cwd / ".git"
        work_tree = work_tree or cwd
    return git_dir, work_tree


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
        *config_args(HARDENING_CONFIG),
        *config_args(drivers),
        *location_args(git_dir, work_tree),
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
            self._persistent_git_options = [*config_args(settings), *self.location]
            cleared = {
                k: None for k in os.environ if k.startswith("GIT_") and k not in HARDENING_ENV
            }
            self.update_environment(**cleared, **HARDENING_ENV)
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
