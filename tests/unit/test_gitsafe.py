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

from clover_code.gitsafe import (
    UnsafeRepository,
    git_argv,
    git_env,
    repo_driver_overrides,
    run_git,
    safe_repo,
)

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")

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


# -- nested repositories ----------------------------------------------------------

NESTED_TRAP = "#!/bin/sh\ntouch {marker}\ncat\n"


def _arm(repo: Path, marker: Path, filter_name: str) -> None:
    """Make ``repo`` run a program at any git command in it: filter, fsmonitor, hooks."""
    trap = repo / ".trap"
    trap.write_text(NESTED_TRAP.format(marker=marker))
    trap.chmod(0o755)
    git_dir = Path(_plain_git(repo, "rev-parse", "--absolute-git-dir").stdout.strip())
    for key, value in [
        (f"filter.{filter_name}.clean", str(trap)),
        (f"filter.{filter_name}.smudge", str(trap)),
        (f"filter.{filter_name}.required", "true"),
        (f"diff.{filter_name}.textconv", str(trap)),
        ("core.fsmonitor", str(trap)),
    ]:
        _plain_git(repo, "config", key, value)
    for hook in ["pre-commit", "post-commit", "post-checkout"]:
        shutil.copy(trap, git_dir / "hooks" / hook)
    (repo / ".gitattributes").write_text(f"* filter={filter_name} diff={filter_name}\n")


def _stir(*files: Path) -> None:
    """Same size, new content and time: git must read (and filter) these files again."""
    for path in files:
        data = path.read_bytes()
        path.write_bytes(data.swapcase())


@pytest.fixture
def nested(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path, list[Path]]:
    """A workspace repository holding a real submodule and a plain nested repository,
    each armed to run a program; returns (workspace, marker directory, files to stir)."""
    monkeypatch.setenv("HOME", str(tmp_path))
    (tmp_path / ".gitconfig").write_text(
        '[user]\n\tname = t\n\temail = t@example.invalid\n[protocol "file"]\n\tallow = always\n'
    )
    markers = tmp_path / "markers"
    markers.mkdir()
    source = tmp_path / "source"
    source.mkdir()
    _plain_git(source, "init", "-q", "-b", "main")
    (source / "s.txt").write_text("sub\n")
    _plain_git(source, "add", "s.txt")
    _plain_git(source, "commit", "-q", "-m", "sub")

    ws = tmp_path / "ws"
    ws.mkdir()
    _plain_git(ws, "init", "-q", "-b", "main")
    (ws / "a.txt").write_text("top\n")
    _plain_git(ws, "add", "a.txt")
    _plain_git(ws, "submodule", "add", "-q", str(source), "sub")
    _plain_git(ws, "commit", "-q", "-m", "top with a submodule")
    assert (ws / "sub" / ".git").is_file(), "the submodule was not made"

    nest = ws / "nest"
    nest.mkdir()
    _plain_git(nest, "init", "-q", "-b", "main")
    (nest / "n.txt").write_text("nest\n")
    _plain_git(nest, "add", "n.txt")
    _plain_git(
        nest, "-c", "user.name=t", "-c", "user.email=t@example.invalid", "commit", "-qm", "n"
    )

    _arm(ws / "sub", markers / "submodule", "subx")
    _arm(nest, markers / "nested", "nestx")
    # The submodule's own ignore setting must not bring the recursion back.
    _plain_git(ws, "config", "-f", ".gitmodules", "submodule.sub.ignore", "none")
    return ws, markers, [ws / "sub" / "s.txt", nest / "n.txt"]


def test_nested_traps_fire_without_hardening(nested: tuple[Path, Path, list[Path]]) -> None:
    ws, markers, files = nested
    _stir(*files)
    _plain_git(ws, "status")
    assert (markers / "submodule").exists()
    _plain_git(ws / "nest", "status")
    assert (markers / "nested").exists()


def test_harness_git_never_enters_nested_repositories(
    nested: tuple[Path, Path, list[Path]], tmp_path: Path
) -> None:
    from clover_code.agent.checkpoints import CheckpointStore

    ws, markers, files = nested
    _stir(*files)
    # The status bar.
    status = run_git("status", "--porcelain=v1", "-b", cwd=ws, check=False)
    assert status.returncode == 0 and status.stdout.startswith("## main"), status.stderr
    for args in [("diff",), ("diff", "HEAD"), ("diff", "--cached"), ("log", "-p", "-2")]:
        _stir(*files)
        run_git(*args, cwd=ws, check=False)
    # Checkpoints, /diff, auto-commit and undo.
    store = CheckpointStore(ws, tmp_path / "data", session_id="s1")
    store.snapshot(1)
    _stir(*files)
    (ws / "a.txt").write_text("changed\n")
    (ws / "added.txt").write_text("new\n")
    store.end_turn(1)
    _, changed = store.diff_since_session_start()
    assert changed == ["a.txt", "added.txt"], changed
    commit = store.auto_commit("agent work")
    assert commit is not None
    store.snapshot(2)
    _stir(*files)
    store.end_turn(2)
    store.undo()
    # GitPython through the hardened wrapper.
    _stir(*files)
    safe_repo(ws).is_dirty(untracked_files=True)
    assert list(markers.iterdir()) == []
    shown = _plain_git(ws, "show", "--name-only", "--format=%s", "HEAD").stdout.split()
    assert shown == ["agent", "work", "a.txt", "added.txt"]


def test_porcelain_commit_skips_a_submodule_even_when_it_asks_not_to_be(
    nested: tuple[Path, Path, list[Path]],
) -> None:
    ws, markers, files = nested
    _stir(*files)
    (ws / "a.txt").write_text("changed\n")
    run_git("add", "-A", cwd=ws)  # the plain nested repository becomes a gitlink too
    run_git("commit", "-q", "-m", "porcelain", cwd=ws)
    for args in [("status",), ("commit", "-qam", "again"), ("diff", "HEAD~1")]:
        _stir(*files)
        (ws / "a.txt").write_text(f"{args}\n")
        run_git(*args, cwd=ws)
    assert list(markers.iterdir()) == []
    tree = _plain_git(ws, "ls-tree", "--name-only", "HEAD").stdout.split()
    assert "nest" in tree and "sub" in tree
    argv = git_argv(["commit"], cwd=ws)
    assert "submodule.sub.ignore=all" in argv and "diff.ignoreSubmodules=all" in argv
    assert git_argv(["status"], cwd=ws)[-2:] == ["status", "--ignore-submodules=all"]
