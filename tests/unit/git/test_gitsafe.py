"""Host git hardening: a repository the agent wrote cannot make harness git run code.

Each trap is planted the way an agent could (hooks, fsmonitor, filter, diff
and merge drivers, signing, an include of a file in the work tree), then the
harness's usual git commands run through ``gitsafe``. A control run without
``gitsafe`` shows the traps are live, so the assertions can fail.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
from pathlib import Path

import pytest

from clover_code.fs.stamps import stamps
from clover_code.git.hardening import git_env
from clover_code.git.repo_drivers import UnsafeRepository, repo_driver_overrides
from clover_code.git.safe import git_argv, run_git, safe_repo
from tests.waiting import need_program, wait_until


@pytest.fixture(autouse=True)
def _git_installed() -> None:
    need_program("git")


TRAP = """#!/bin/sh
touch "{markers}/$(basename "$0")-$$"
cat
"""


def _plain_git(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env |= {"GIT_CONFIG_NOSYSTEM": "1", "HOME": str(repo.parent)}
    return subprocess.run(
        ["git", *args], cwd=repo, env=env, capture_output=True, text=True, check=False
    )


@pytest.fixture
def trapped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    """A repository with every trap planted; returns (repo, marker directory)."""
    monkeypatch.setenv("HOME", str(tmp_path))  # no user config of the test machine
    markers = tmp_path / "markers"
    markers.mkdir()
    repo = tmp_path / "repo"
    repo.mkdir()
    _plain_git(repo, "init", "-q", "-b", "main")
    for key, value in [("user.name", "t"), ("user.email", "t@example.invalid")]:
        _plain_git(repo, "config", key, value)
    (repo / "a.txt").write_text("one\n")
    _plain_git(repo, "add", "a.txt")
    _plain_git(repo, "commit", "-q", "-m", "init")

    tools = repo / "tools"  # the agent's programs live in the work tree
    tools.mkdir()
    for name in ["clean", "smudge", "textconv", "extdiff", "merge", "fsmonitor", "gpg", "ssh"]:
        script = tools / name
        script.write_text(TRAP.format(markers=markers))
        script.chmod(script.stat().st_mode | stat.S_IXUSR)
    hooks = repo / ".git" / "hooks"
    for hook in ["pre-commit", "post-commit", "commit-msg", "post-checkout", "post-merge"]:
        (hooks / hook).write_text(TRAP.format(markers=markers))
        (hooks / hook).chmod(0o755)
    other_hooks = repo / "myhooks"
    shutil.copytree(hooks, other_hooks)
    (repo / ".gitattributes").write_text("*.txt filter=evil diff=evil merge=evil\n")
    (repo / "included.cfg").write_text(f'[filter "inc"]\n\tclean = {tools / "clean"}\n')
    config = {
        "core.hooksPath": str(other_hooks),
        "core.fsmonitor": str(tools / "fsmonitor"),
        "core.sshCommand": str(tools / "ssh"),
        "filter.evil.clean": str(tools / "clean"),
        "filter.evil.smudge": str(tools / "smudge"),
        "filter.evil.required": "true",
        "diff.external": str(tools / "extdiff"),
        "diff.evil.textconv": str(tools / "textconv"),
        "diff.evil.command": str(tools / "extdiff"),
        "merge.evil.driver": f"{tools / 'merge'} %O %A %B",
        "commit.gpgSign": "true",
        "gpg.program": str(tools / "gpg"),
        "log.showSignature": "true",
        "include.path": str(repo / "included.cfg"),
    }
    for key, value in config.items():
        _plain_git(repo, "config", key, value)
    (repo / "b.txt").write_text("inc\n")
    (repo / ".gitattributes").write_text(
        "a.txt filter=evil diff=evil merge=evil\nb.txt filter=inc\n"
    )
    (repo / "a.txt").write_text("one\ntwo\n")
    return repo, markers


def _harness_session(repo: Path) -> None:
    """The git commands the harness runs on the host: status, diffs, commits, undo."""
    for args in [
        ("status", "--porcelain"),
        ("diff",),
        ("diff", "--stat"),
        ("add", "-A"),
        ("diff", "--cached"),
        ("commit", "-q", "-m", "agent work"),
        ("log", "-p", "-2"),
        ("show", "HEAD"),
        ("blame", "a.txt"),
        ("checkout", "-q", "HEAD~1", "--", "a.txt"),
        ("reset", "-q", "--hard", "HEAD"),
        ("stash", "list"),
    ]:
        run_git(*args, cwd=repo, check=False)


def test_the_traps_fire_without_hardening(trapped: tuple[Path, Path]) -> None:
    repo, markers = trapped
    _plain_git(repo, "status")
    _plain_git(repo, "add", "-A")
    _plain_git(repo, "diff", "--cached")
    _plain_git(repo, "commit", "-q", "-m", "x")
    fired = {p.name.rsplit("-", 1)[0] for p in markers.iterdir()}
    assert {"fsmonitor", "clean", "extdiff", "pre-commit"} <= fired


def test_harness_git_runs_no_planted_program(trapped: tuple[Path, Path]) -> None:
    repo, markers = trapped
    _harness_session(repo)
    assert list(markers.iterdir()) == []
    # The commit happened, unsigned and without hooks.
    assert run_git("log", "-1", "--format=%s", cwd=repo).stdout.strip() == "agent work"


def test_merge_through_a_planted_driver_fails_instead_of_running_it(
    trapped: tuple[Path, Path],
) -> None:
    repo, markers = trapped
    run_git("add", "-A", cwd=repo)
    run_git("commit", "-q", "-m", "base", cwd=repo)
    run_git("checkout", "-q", "-b", "side", cwd=repo)
    (repo / "a.txt").write_text("side\n")
    run_git("commit", "-q", "-am", "side", cwd=repo)
    run_git("checkout", "-q", "main", cwd=repo)
    (repo / "a.txt").write_text("main\n")
    run_git("commit", "-q", "-am", "main", cwd=repo)
    result = run_git("merge", "side", "-m", "merge", cwd=repo, check=False)
    assert result.returncode != 0
    assert list(markers.iterdir()) == []


def test_drivers_from_the_repository_and_its_includes_are_emptied(
    trapped: tuple[Path, Path],
) -> None:
    repo, _ = trapped
    overrides = dict(repo_driver_overrides(repo))
    assert overrides["filter.evil.clean"] == ""
    assert overrides["filter.evil.smudge"] == ""
    assert overrides["filter.evil.required"] == "false"
    assert overrides["filter.inc.clean"] == ""
    assert overrides["merge.evil.driver"] == ""


def test_argv_carries_the_hardening_and_safe_diff_flags(trapped: tuple[Path, Path]) -> None:
    repo, _ = trapped
    argv = git_argv(["diff", "HEAD"], cwd=repo)
    assert "core.hooksPath=/dev/null" in argv
    assert "core.fsmonitor=false" in argv
    assert f"--git-dir={repo / '.git'}" in argv
    assert f"--work-tree={repo}" in argv
    tail = argv[argv.index("diff") :]
    assert tail == ["diff", "--no-ext-diff", "--no-textconv", "--ignore-submodules=all", "HEAD"]


def test_safe_diff_flags_follow_global_options(trapped: tuple[Path, Path]) -> None:
    repo, markers = trapped
    argv = git_argv(["-c", "color.ui=never", "log", "-p"], cwd=repo)
    safe = ["--no-ext-diff", "--no-textconv", "--ignore-submodules=all"]
    assert argv[argv.index("log") :] == ["log", *safe, "-p"]
    run_git("-c", "color.ui=never", "diff", cwd=repo)
    run_git("stash", "show", "-p", cwd=repo, check=False)
    assert list(markers.iterdir()) == []


def test_git_env_drops_inherited_git_variables() -> None:
    env = git_env({"GIT_DIR": "/elsewhere", "GIT_CONFIG_PARAMETERS": "'x=y'", "PATH": "/bin"})
    assert "GIT_DIR" not in env
    assert "GIT_CONFIG_PARAMETERS" not in env
    assert env["GIT_CONFIG_NOSYSTEM"] == "1"
    assert env["PATH"] == "/bin"


def test_planted_worktree_cannot_redirect_harness_git(
    trapped: tuple[Path, Path], tmp_path: Path
) -> None:
    repo, _ = trapped
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "precious.txt").write_text("keep\n")
    _plain_git(repo, "config", "core.worktree", str(outside))
    run_git("add", "-A", cwd=repo)
    run_git("reset", "-q", "--hard", "HEAD", cwd=repo)
    assert (outside / "precious.txt").read_text() == "keep\n"
    grepo = safe_repo(repo)
    grepo.git.add("-A")
    grepo.git.reset("-q", "--hard", "HEAD")
    assert (outside / "precious.txt").read_text() == "keep\n"
    assert "precious.txt" not in grepo.git.ls_files()


def test_unnameable_driver_is_refused(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    _plain_git(repo, "init", "-q")
    with (repo / ".git" / "config").open("a") as fh:
        fh.write('[filter "a=b"]\n\tclean = /bin/false\n')
    with pytest.raises(UnsafeRepository, match="cannot switch off"):
        run_git("status", cwd=repo)


def test_gitpython_repo_is_hardened(trapped: tuple[Path, Path]) -> None:
    repo, markers = trapped
    grepo = safe_repo(repo)
    grepo.git.status()
    grepo.git.diff()
    grepo.git.add("-A")
    grepo.index.commit("through GitPython")
    grepo.git.log("-p", "-1")
    assert list(markers.iterdir()) == []
    assert grepo.head.commit.message == "through GitPython"


def _counting_git(tmp_path: Path) -> tuple[str, Path]:
    """A git that logs each run (one line each) before running the real one."""
    log = tmp_path / "git-runs.log"
    shim = tmp_path / "counting-git"
    shim.write_text(f'#!/bin/sh\necho "$*" >> "{log}"\nexec "{shutil.which("git")}" "$@"\n')
    shim.chmod(0o755)
    log.touch()
    return str(shim), log


def _runs(log: Path) -> int:
    return len(log.read_text().splitlines())


@pytest.fixture
def settled_repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A repository whose config is old enough for its stamp to be trusted."""
    monkeypatch.setenv("HOME", str(tmp_path))
    repo = tmp_path / "repo"
    repo.mkdir()
    _plain_git(repo, "init", "-q")
    (repo / "a.txt").write_text("one\n")
    _plain_git(repo, "add", "a.txt")
    paths = [repo / ".git" / "config", repo / ".git" / "index"]
    wait_until(lambda: stamps(paths) is not None, message="the config's times to settle")
    return repo


def test_overrides_are_read_once_while_the_config_is_unchanged(
    settled_repo: Path, tmp_path: Path
) -> None:
    git, log = _counting_git(tmp_path)
    where = {"git_dir": settled_repo / ".git", "work_tree": settled_repo, "git": git}
    assert repo_driver_overrides(settled_repo, **where) == []
    first = _runs(log)
    assert repo_driver_overrides(settled_repo, **where) == []
    assert _runs(log) == first, "read again though nothing changed"

    # A driver planted right after (within the same clock tick, even) is emptied at once.
    with (settled_repo / ".git" / "config").open("a") as fh:
        fh.write(f'[filter "evil"]\n\tclean = {tmp_path / "trap"}\n')
    assert dict(repo_driver_overrides(settled_repo, **where))["filter.evil.clean"] == ""
    assert _runs(log) > first


def test_overrides_with_includes_or_nested_repositories_are_read_every_time(
    settled_repo: Path, tmp_path: Path
) -> None:
    git, log = _counting_git(tmp_path)
    where = {"git_dir": settled_repo / ".git", "work_tree": settled_repo, "git": git}
    included = tmp_path / "included.cfg"
    included.write_text("[core]\n")
    _plain_git(settled_repo, "config", "include.path", str(included))
    inner = settled_repo / "inner"
    inner.mkdir()
    _plain_git(inner, "init", "-q")
    (inner / "b.txt").write_text("two\n")
    _plain_git(inner, "add", "b.txt")
    _plain_git(inner, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "b")
    _plain_git(settled_repo, "add", "inner")  # a gitlink: a nested repository
    paths = [settled_repo / ".git" / "config", settled_repo / ".git" / "index"]
    wait_until(lambda: stamps(paths) is not None, message="the config's times to settle")

    repo_driver_overrides(settled_repo, **where)
    once = _runs(log)
    # The included file and the nested repository's config are not stamped: a driver
    # planted in either must be seen without the repository's own files changing.
    included.write_text(f'[filter "inc"]\n\tclean = {tmp_path / "trap"}\n')
    _plain_git(inner, "config", "merge.deep.driver", str(tmp_path / "trap"))
    overrides = dict(repo_driver_overrides(settled_repo, **where))
    assert overrides["filter.inc.clean"] == "" and overrides["merge.deep.driver"] == ""
    assert _runs(log) == 2 * once


def test_a_repository_without_an_index_is_not_listed_for_gitlinks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # No index, no gitlink: only the config is read. Once an index holds a gitlink, the
    # nested repository is found (its drivers emptied).
    monkeypatch.setenv("HOME", str(tmp_path))
    git, log = _counting_git(tmp_path)
    repo = tmp_path / "repo"
    repo.mkdir()
    _plain_git(repo, "init", "-q")
    where = {"git_dir": repo / ".git", "work_tree": repo, "git": git}
    assert repo_driver_overrides(repo, **where) == []
    assert [line.split()[-6:] for line in log.read_text().splitlines()] == [
        ["config", "--list", "--show-scope", "--name-only", "-z", "--includes"]
    ]

    inner = repo / "inner"
    inner.mkdir()
    _plain_git(inner, "init", "-q")
    _plain_git(inner, "config", "filter.deep.clean", str(tmp_path / "trap"))
    (inner / "b.txt").write_text("two\n")
    _plain_git(inner, "add", "b.txt")
    _plain_git(inner, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "b")
    _plain_git(repo, "add", "inner")  # the index now holds a gitlink
    assert dict(repo_driver_overrides(repo, **where))["filter.deep.clean"] == ""
