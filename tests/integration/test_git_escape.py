"""``.git`` attacks: a command must not plant code that the user's own git runs later.

Each attack runs through the shell tool (so the guard that checks ``.git``
after every command is on) in Docker, bubblewrap and the host sandbox. Then
the user's plain git runs on the host (``status``, ``checkout``, ``add``,
``commit``), as the user would, and the test asserts that no planted program
ran (its marker file is absent) and the repository is intact.

In Docker and bubblewrap the read-only ``.git`` mount stops the attack itself:
the command fails and the guard has nothing to put back. On the host (the user
chose no isolation) the attack succeeds and the guard puts ``.git`` back, and
says so in the tool result.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from clover_code.tools.base import ToolContext, ToolResult
from clover_code.tools.sandbox.base import Sandbox
from clover_code.tools.sandbox.host import HostSandbox
from clover_code.tools.shell import ShellArgs, ShellTool
from clover_code.tools.workspace import Workspace
from tests.integration.sandbox_fixtures import KINDS, Space, open_sandbox

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed"),
]

ALL_KINDS = [*KINDS, "host"]

PLANT = 'printf \'[core]\\n\\tfsmonitor = "%s"\\n\' "$T"'
"""Shell that prints a config section naming the planted program ``$T``."""

ATTACKS = {
    "replace": f"mv .git .g && mkdir .git && cp -a .g/. .git/ && {PLANT} >> .git/config"
    ' && cp "$T" .git/hooks/pre-commit',
    "remove_and_init": 'rm -rf .git; git init -q . && cp "$T" .git/hooks/pre-commit'
    ' && git config core.fsmonitor "$T"',
    "config_symlink": f'{PLANT} > evil.cfg && ln -sf "$PWD/evil.cfg" .git/config',
    "write_through_symlink": f"ln -s .git/config cfg && {PLANT} >> cfg",
    "attributes": "mkdir -p .git/info && echo '* filter=userfilter' >> .git/info/attributes",
    "post_checkout_hook": 'cp "$T" .git/hooks/post-checkout',
    "hooks_dir_link": 'mkdir -p myhooks && cp "$T" myhooks/pre-commit'
    ' && rm -rf .git/hooks && ln -s "$PWD/myhooks" .git/hooks',
    "gitdir_file": "git init -q --bare evil.git && git --git-dir=evil.git config core.bare false"
    ' && git --git-dir=evil.git config core.fsmonitor "$T" && cp "$T" evil.git/hooks/pre-commit'
    ' && mv .git .g && echo "gitdir: $PWD/evil.git" > .git',
}
"""Each attack plants a program (``$T``) where the user's git would run it."""


def _user_git(space: Space, home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """Plain git on the host, as the user runs it (their own config, nothing hardened)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env |= {"HOME": str(home), "GIT_CONFIG_NOSYSTEM": "1"}
    return subprocess.run(
        ["git", *args], cwd=space.root, env=env, capture_output=True, text=True, check=False
    )


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, space: Space) -> Path:
    """The user's home: an identity, trust in the workspace, and a filter of their own.

    The filter is the user's (global config): it runs only where an attribute
    names it, so an attack that adds such an attribute inside ``.git`` shows.
    """
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    tool = space.outside / "user-filter"
    tool.write_text(f"#!/bin/sh\ntouch {space.outside}/MARKER-user-filter\ncat\n")
    tool.chmod(0o755)
    (home / ".gitconfig").write_text(
        "[user]\n\tname = t\n\temail = t@example.invalid\n[safe]\n\tdirectory = *\n"
        f'[filter "userfilter"]\n\tclean = {tool}\n'
    )
    return home


@pytest.fixture
def repo(space: Space, home: Path) -> Path:
    """A repository with one commit in the workspace, and the planted program ``tool.sh``."""
    _user_git(space, home, "init", "-q", "-b", "main")
    (space.root / "a.txt").write_text("one\n")
    _user_git(space, home, "add", "a.txt")
    _user_git(space, home, "commit", "-q", "-m", "init")
    tool = space.root / "tool.sh"
    tool.write_text(f'#!/bin/sh\ntouch "{space.outside}/MARKER-$(basename "$0")"\ncat\n')
    tool.chmod(0o755)
    if os.getuid() == 0:
        subprocess.run(["chown", "-R", f"{space.uid}:{space.gid}", str(space.root)], check=True)
    return space.root


@pytest.fixture
async def box(kind: str, space: Space, request: pytest.FixtureRequest) -> AsyncIterator[Sandbox]:
    """A sandbox of ``kind`` (``host``: no isolation) on the workspace."""
    host = kind == "host"
    sandbox = HostSandbox(space.root) if host else open_sandbox(kind, space.root, request)
    try:
        yield sandbox
    finally:
        await sandbox.close()


async def _shell(box: Sandbox, root: Path, command: str) -> ToolResult:
    ctx = ToolContext(workspace=Workspace(root), sandbox=box)
    tool = root / "tool.sh"
    return await ShellTool().run(ShellArgs(command=f"T={tool}\n{command}"), ctx)


def _markers(space: Space) -> list[str]:
    return sorted(p.name for p in space.outside.iterdir() if p.name.startswith("MARKER"))


def _use_the_repo(space: Space, home: Path) -> None:
    """What the user does next: every git command that could run a planted program."""
    (space.root / "a.txt").write_text("two\n")
    for args in [
        ("status",),
        ("diff",),
        ("add", "-A"),
        ("commit", "-q", "-m", "after"),
        ("checkout", "-q", "-b", "other"),
        ("checkout", "-q", "main"),
    ]:
        _user_git(space, home, *args)


@pytest.mark.parametrize("attack", sorted(ATTACKS))
@pytest.mark.parametrize("kind", ALL_KINDS)
async def test_git_attack_plants_nothing_the_user_runs(
    kind: str, attack: str, box: Sandbox, space: Space, home: Path, repo: Path
) -> None:
    dot_git = repo / ".git"
    ident = (dot_git.stat().st_dev, dot_git.stat().st_ino)
    config = (dot_git / "config").read_bytes()
    hooks = sorted(p.name for p in (dot_git / "hooks").iterdir())

    result = await _shell(box, repo, ATTACKS[attack])

    if kind == "host":
        # No isolation: the attack ran, and the guard put .git back.
        assert "clover-code put it back" in result.text, result.text
        assert result.notices and "put it back" in result.notices[0]
    else:
        # The read-only mount stopped it: nothing to put back.
        assert "put it back" not in result.text, result.text
        assert result.display.exit_code != 0, result.text
    assert dot_git.is_dir() and not dot_git.is_symlink()
    if attack != "remove_and_init" or kind != "host":
        assert (dot_git.stat().st_dev, dot_git.stat().st_ino) == ident
    assert (dot_git / "config").read_bytes() == config
    assert not (dot_git / "config").is_symlink()
    assert sorted(p.name for p in (dot_git / "hooks").iterdir()) == hooks
    assert not (dot_git / "info" / "attributes").exists()

    _use_the_repo(space, home)

    assert _markers(space) == []
    log = _user_git(space, home, "log", "--format=%s", "main").stdout.split()
    if attack == "remove_and_init" and kind == "host":
        # The history went with `rm -rf` on the host (/undo brings it back); what is
        # left is the fresh repository, with the old config and hooks.
        log = _user_git(space, home, "log", "--all", "--format=%s").stdout.split()
        assert log == ["after"]
    else:
        assert log == ["after", "init"]


@pytest.mark.parametrize("kind", KINDS)
async def test_git_writes_inside_the_sandbox_fail(
    kind: str, box: Sandbox, space: Space, home: Path, repo: Path
) -> None:
    """The price of a read-only .git: commits are made on the host, not in the sandbox."""
    result = await _shell(
        box, repo, "git -c user.name=a -c user.email=a@b commit -q --allow-empty -m x"
    )
    assert result.display.exit_code != 0
    assert "Read-only file system" in result.text, result.text
    assert _user_git(space, home, "log", "--format=%s").stdout.split() == ["init"]
    status = await _shell(box, repo, "git status --porcelain && echo read-ok")
    assert "read-ok" in status.text, status.text


@pytest.mark.parametrize("kind", ALL_KINDS)
async def test_a_new_git_that_runs_programs_is_moved_aside(
    kind: str, box: Sandbox, space: Space, home: Path
) -> None:
    """No .git when the sandbox started (nothing to mount): the guard catches a planted one."""
    tool = space.root / "tool.sh"
    tool.write_text(f'#!/bin/sh\ntouch "{space.outside}/MARKER-$(basename "$0")"\ncat\n')
    tool.chmod(0o755)
    if os.getuid() == 0:
        os.chown(tool, space.uid, space.gid)

    result = await _shell(
        box, space.root, 'git init -q . && cp "$T" .git/hooks/pre-commit && echo planted'
    )

    assert "planted" in result.text, result.text
    assert "moved to .git-clover-quarantine-" in result.text, result.text
    assert not (space.root / ".git").exists()
    _user_git(space, home, "init", "-q")
    _use_the_repo(space, home)
    assert _markers(space) == []


@pytest.mark.parametrize("kind", ALL_KINDS)
async def test_a_new_plain_git_is_left_alone(kind: str, box: Sandbox, space: Space) -> None:
    """``git init`` of a workspace that had no repository is fine when it plants nothing."""
    result = await _shell(box, space.root, "git init -q . && echo made")
    assert "made" in result.text and "put it back" not in result.text, result.text
    assert (space.root / ".git" / "HEAD").is_file()


@pytest.mark.parametrize("kind", KINDS)
async def test_a_git_made_in_the_sandbox_is_read_only_from_the_next_command(
    kind: str, box: Sandbox, space: Space
) -> None:
    made = await _shell(box, space.root, "git init -q . && echo made")
    assert "made" in made.text, made.text
    result = await _shell(box, space.root, "echo '[core]' >> .git/config")
    assert "Read-only file system" in result.text, result.text
    assert (space.root / ".git" / "config").read_text().count("[core]") == 1
    if kind == "docker":
        assert "container was started again to keep .git read-only" in result.text


@pytest.mark.parametrize("kind", ["host"])
async def test_control_without_the_guard_the_attack_works(
    kind: str, box: Sandbox, space: Space, home: Path, repo: Path
) -> None:
    """The same attack straight through the sandbox (no guard): the user's git runs it."""
    tool = repo / "tool.sh"
    result = await box.exec(f"T={tool}\n{ATTACKS['replace']}", timeout=30)
    assert result.exit_code == 0, result.output
    _use_the_repo(space, home)
    assert "MARKER-tool.sh" in _markers(space)


# -- repositories inside the workspace that the user's git enters -------------------

NESTED_ATTACKS = {
    "submodule_pointer": "git init -q --bare evil.git"
    ' && git --git-dir=evil.git config core.fsmonitor "$T"'
    ' && echo "gitdir: $PWD/evil.git" > sub/.git',
    "embedded_config": f"{PLANT} >> emb/.git/config",
    "embedded_replace": "mv emb/.git emb/.g && mkdir emb/.git && cp -a emb/.g/. emb/.git/"
    f" && {PLANT} >> emb/.git/config",
    "embedded_hook": 'cp "$T" emb/.git/hooks/post-checkout',
}
"""Each plants a program where the user's ``git status`` at the top reads it: inside a
submodule or an added (embedded) repository, both of which git enters."""


@pytest.fixture
def nested_repo(repo: Path, space: Space, home: Path) -> Path:
    """The workspace repository with a real submodule ``sub`` and an added repository ``emb``."""
    with (home / ".gitconfig").open("a") as fh:
        fh.write('[protocol "file"]\n\tallow = always\n')
    source = space.outside / "source"
    source.mkdir()
    for args in [("init", "-q", "-b", "main"), ("commit", "-q", "--allow-empty", "-m", "s")]:
        subprocess.run(["git", *args], cwd=source, env={**os.environ, "HOME": str(home)})
    _user_git(space, home, "submodule", "add", "-q", str(source), "sub")
    emb = repo / "emb"
    emb.mkdir()
    for args in [("init", "-q", "-b", "main"), ("commit", "-q", "--allow-empty", "-m", "e")]:
        subprocess.run(["git", *args], cwd=emb, env={**os.environ, "HOME": str(home)})
    _user_git(space, home, "add", "emb")
    _user_git(space, home, "commit", "-q", "-m", "nested")
    assert (repo / "sub" / ".git").is_file() and (repo / "emb" / ".git").is_dir()
    if os.getuid() == 0:
        subprocess.run(["chown", "-R", f"{space.uid}:{space.gid}", str(repo)], check=True)
    return repo


@pytest.mark.parametrize("attack", sorted(NESTED_ATTACKS))
@pytest.mark.parametrize("kind", ALL_KINDS)
async def test_nested_repository_attack_plants_nothing_the_user_runs(
    kind: str, attack: str, box: Sandbox, space: Space, home: Path, nested_repo: Path
) -> None:
    pointer = (nested_repo / "sub" / ".git").read_bytes()
    config = (nested_repo / "emb" / ".git" / "config").read_bytes()

    result = await _shell(box, nested_repo, NESTED_ATTACKS[attack])

    if kind == "host":
        assert "clover-code put it back" in result.text, result.text
    else:
        assert "put it back" not in result.text, result.text
        assert result.display.exit_code != 0, result.text
    assert (nested_repo / "sub" / ".git").read_bytes() == pointer
    assert (nested_repo / "emb" / ".git" / "config").read_bytes() == config
    for args in [("status",), ("diff",), ("checkout", "-q", "-b", "x"), ("-C", "emb", "status")]:
        _user_git(space, home, *args)
    _user_git(space, home, "-C", "emb", "checkout", "-q", "-b", "y")
    assert _markers(space) == []


@pytest.mark.parametrize("kind", ["host"])
async def test_control_without_the_guard_a_nested_attack_works(
    kind: str, box: Sandbox, space: Space, home: Path, nested_repo: Path
) -> None:
    tool = nested_repo / "tool.sh"
    result = await box.exec(f"T={tool}\n{NESTED_ATTACKS['embedded_config']}", timeout=30)
    assert result.exit_code == 0, result.output
    _user_git(space, home, "status")
    assert "MARKER-tool.sh" in _markers(space)
