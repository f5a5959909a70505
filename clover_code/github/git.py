"""Git in the job's checkout: branch, commit, push.

The token reaches git only through its environment (``GIT_CONFIG_COUNT`` /
``GIT_CONFIG_KEY_n`` / ``GIT_CONFIG_VALUE_n``, an ``http.extraheader`` for
the server's URL): never in argv, where ``ps`` and error messages show it,
never in a config file the agent could read.
"""

from __future__ import annotations

import base64
import os
import re
import subprocess
from collections.abc import Mapping
from pathlib import Path

from clover_code.errors import CloverError

__all__ = ["GitError", "Repo", "branch_slug", "push_env"]

BOT_NAME = "clover-code[bot]"
BOT_EMAIL = "clover-code[bot]@users.noreply.github.com"


class GitError(CloverError):
    """A git command in the checkout failed (exit 1)."""


def branch_slug(title: str, limit: int = 40) -> str:
    """A branch-name-safe slug of ``title``: lowercase words joined by dashes."""
    slug = re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")
    return slug[:limit].rstrip("-") or "change"


def push_env(token: str, server_url: str, base: Mapping[str, str]) -> dict[str, str]:
    """``base`` plus git config that sends ``token`` to ``server_url`` as a basic-auth header."""
    env = dict(base)
    count = int(env.get("GIT_CONFIG_COUNT", "0") or "0")
    basic = base64.b64encode(f"x-access-token:{token}".encode()).decode()
    env[f"GIT_CONFIG_KEY_{count}"] = f"http.{server_url.rstrip('/')}/.extraheader"
    env[f"GIT_CONFIG_VALUE_{count}"] = f"AUTHORIZATION: basic {basic}"
    env["GIT_CONFIG_COUNT"] = str(count + 1)
    env["GIT_TERMINAL_PROMPT"] = "0"
    return env


class Repo:
    """The checkout at ``root``; ``secret_env`` is used only for fetch and push."""

    def __init__(self, root: Path, secret_env: Mapping[str, str] | None = None) -> None:
        self.root = root
        self._secret_env = dict(secret_env) if secret_env is not None else None

    def git(self, *args: str, secret: bool = False) -> str:
        """Run ``git args`` in the checkout; returns stdout. Raises GitError on failure."""
        env = self._secret_env if secret and self._secret_env is not None else None
        done = subprocess.run(
            ["git", *args],
            cwd=self.root,
            env=env if env is not None else _plain_env(),
            capture_output=True,
            # File names may be any bytes: kept as surrogate escapes, which turn back
            # into the same bytes when passed to git again.
            encoding="utf-8",
            errors="surrogateescape",
            check=False,
        )
        if done.returncode != 0:
            detail = (done.stderr or done.stdout).strip().splitlines()
            raise GitError(f"git {args[0]} failed: {detail[-1] if detail else done.returncode}")
        return done.stdout

    def head(self) -> str:
        """The commit checked out."""
        return self.git("rev-parse", "HEAD").strip()

    def current_branch(self) -> str | None:
        """The branch checked out, or None on a detached HEAD."""
        name = self.git("rev-parse", "--abbrev-ref", "HEAD").strip()
        return None if name == "HEAD" else name

    def dirty(self) -> bool:
        """Whether the work tree has changes, untracked files included."""
        return bool(self.git("status", "--porcelain", "--untracked-files=all").strip())

    def drop_stored_credentials(self) -> list[str]:
        """Remove ``http.*.extraheader`` entries from the checkout's config; returns their keys.

        ``actions/checkout`` stores the job's token there unless told not to,
        where the agent could read it; pushes bring their own header anyway.
        """
        try:
            listed = self.git("config", "--local", "--get-regexp", r"^http\..*\.extraheader$")
        except GitError:
            return []  # none set: git exits 1
        keys = sorted({line.split(" ", 1)[0] for line in listed.splitlines() if line.strip()})
        for key in keys:
            self.git("config", "--local", "--unset-all", key)
        return keys

    def checkout_remote_branch(self, branch: str) -> None:
        """Fetch ``branch`` from origin and check it out, tracking it."""
        self.git(
            "fetch",
            "--quiet",
            "origin",
            f"+refs/heads/{branch}:refs/remotes/origin/{branch}",
            secret=True,
        )
        self.git("checkout", "--quiet", "-B", branch, f"origin/{branch}")

    def new_branch(self, branch: str) -> None:
        """Create ``branch`` at HEAD and check it out."""
        self.git("checkout", "--quiet", "-B", branch)

    def stage_all(self) -> None:
        """Stage every change in the work tree, untracked files included."""
        self.git("add", "--all")

    def changed_since(self, start: str) -> list[str]:
        """The paths that differ between ``start`` and the index (deleted ones left out)."""
        listed = self.git(
            "diff", "--cached", "--name-only", "--no-renames", "--diff-filter=d", "-z", start
        )
        return [path for path in listed.split("\0") if path]

    def staged_bytes(self, path: str) -> bytes:
        """The staged content of ``path``, as bytes (binary files too)."""
        done = subprocess.run(
            ["git", "cat-file", "blob", f":{path}"],
            cwd=self.root,
            env=_plain_env(),
            capture_output=True,
            check=False,
        )
        if done.returncode != 0:
            raise GitError(
                f"git cat-file failed for {path}: {done.stderr.decode(errors='replace')}"
            )
        return done.stdout

    def messages_since(self, start: str) -> str:
        """The messages of the commits made on top of ``start``."""
        return self.git("log", "--format=%B", f"{start}..HEAD")

    def commit_staged(self, message: str) -> str:
        """Commit what is staged as the bot; returns the commit."""
        self.git(
            "-c",
            f"user.name={BOT_NAME}",
            "-c",
            f"user.email={BOT_EMAIL}",
            "commit",
            "--quiet",
            "--no-verify",
            "-m",
            message,
        )
        return self.head()

    def push(self, branch: str) -> None:
        """Push HEAD to ``branch`` on origin."""
        self.git("push", "--quiet", "origin", f"HEAD:refs/heads/{branch}", secret=True)


def _plain_env() -> dict[str, str]:
    env = dict(os.environ)
    env["GIT_TERMINAL_PROMPT"] = "0"
    return env
