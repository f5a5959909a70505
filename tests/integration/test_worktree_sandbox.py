"""A workspace that is a linked git worktree, inside Docker and bubblewrap.

Its ``.git`` is a file pointing into the main repository's ``.git``: both are
protected. The worktree's git directory and the main ``.git`` are mounted
read-only at their own paths, so git works in the sandbox (status, log, diff)
while nothing there, nor in the main checkout, can be changed.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.integration.sandbox_fixtures import KINDS, Space, assert_alive, open_sandbox

pytestmark = pytest.mark.integration


def _git(cwd: Path, *args: str) -> str:
    command = ["git", "-c", "safe.directory=*", "-c", "user.name=t", "-c", "user.email=t@t", *args]
    return subprocess.run(command, cwd=cwd, check=True, capture_output=True, text=True).stdout


def _worktree(space: Space) -> tuple[Path, Path]:
    """A main repository outside the workspace (beside it, under /tmp, which bubblewrap
    hides as it hides the home directory) and a linked worktree as the workspace."""
    main = space.root.parent / "main"
    main.mkdir()
    (main / "app.py").write_text("x = 1\n")
    (main / "private.txt").write_text("only in the main checkout\n")
    _git(main, "init", "-q")
    _git(main, "add", "app.py")
    _git(main, "commit", "-qm", "init")
    tree = space.root / "tree"
    _git(main, "worktree", "add", "-q", "-b", "clover/t", str(tree))
    if os.getuid() == 0:
        for base in (main, tree):
            for path in [base, *base.rglob("*")]:
                os.chown(path, space.uid, space.gid, follow_symlinks=False)
    return main, tree


@pytest.mark.parametrize("kind", KINDS)
async def test_git_works_in_a_worktree_and_both_git_places_are_read_only(
    kind: str, space: Space, request: pytest.FixtureRequest
) -> None:
    main, tree = _worktree(space)
    git_file = (tree / ".git").read_bytes()
    hooks = sorted(p.name for p in (main / ".git" / "hooks").iterdir())
    config = (main / ".git" / "config").read_bytes()
    box = open_sandbox(kind, tree, request)
    try:
        (tree / "app.py").write_text("x = 2\n")
        status = await box.exec(f"cd {tree} && git status --short && git log --oneline", timeout=60)
        assert status.exit_code == 0, status.output
        assert " M app.py" in status.output and "init" in status.output
        attacks = [
            "printf 'gitdir: /tmp' > .git",
            "rm -f .git",
            f"printf '#!/bin/sh\\necho pwned' > {main}/.git/hooks/post-checkout",
            f"printf '[core]\\nfsmonitor = evil' >> {main}/.git/config",
            f"printf evil > {main}/.git/worktrees/tree/HEAD",
            "git commit -qam sneaky",
        ]
        for attack in attacks:
            await box.exec(f"cd {tree} && {attack}", timeout=60)
        assert (tree / ".git").read_bytes() == git_file
        assert sorted(p.name for p in (main / ".git" / "hooks").iterdir()) == hooks
        assert (main / ".git" / "config").read_bytes() == config
        assert _git(main, "log", "--oneline", "clover/t").count("\n") == 1
        # The main checkout itself is not writable from there either.
        await box.exec(f"printf pwned > {main}/private.txt", timeout=60)
        assert (main / "private.txt").read_text() == "only in the main checkout\n"
        await assert_alive(box)
    finally:
        await box.close()


def test_only_a_real_linked_worktree_shows_git_directories_outside(space: Space) -> None:
    from clover_code.tools.sandbox.control_files import outside_paths

    main, tree = _worktree(space)
    assert outside_paths(tree) == [main / ".git"]
    assert outside_paths(main) == []
    # A .git file planted to point elsewhere (not back at itself) shows nothing.
    fake = space.root / "fake"
    fake.mkdir()
    (fake / ".git").write_text(f"gitdir: {main / '.git' / 'worktrees' / 'tree'}\n")
    assert outside_paths(fake) == []
    (fake / ".git").write_text(f"gitdir: {space.outside}\n")
    assert outside_paths(fake) == []
