"""A batch task's own workspace: a clone of its repository at its base commit.

Cloning and checkout go through ``clover_code.gitsafe`` (no hooks, filters or
other programs the repository configures). A local repository is cloned
without hard links, so nothing the agent does reaches the original.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
from pathlib import Path

from clover_code.agent.shadow_store import last_line
from clover_code.gitsafe import run_git


class WorkspaceError(Exception):
    """The workspace could not be made (one sentence)."""


def prepare(source: str, base_commit: str | None, dest: Path) -> None:
    """Clone ``source`` into ``dest`` (made afresh) and check out ``base_commit``."""
    if dest.exists():
        shutil.rmtree(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    clone = run_git(
        "clone",
        "-q",
        "--no-hardlinks",
        source,
        str(dest),
        cwd=dest.parent,
        check=False,
        timeout=3600.0,
    )
    if clone.returncode != 0:
        raise WorkspaceError(f"cannot clone {source}: {last_line(clone.stderr)}.")
    if base_commit:
        checkout = run_git("checkout", "-q", "--detach", base_commit, cwd=dest, check=False)
        if checkout.returncode != 0:
            raise WorkspaceError(
                f"cannot check out {base_commit} in {source}: {last_line(checkout.stderr)}."
            )


async def run_shell(command: str, cwd: Path, log: Path, timeout: float) -> int | None:
    """Run a setup or test command with bash in ``cwd``; its output goes to ``log``.

    Returns the exit code, or None when it ran past ``timeout`` (then it is killed).
    """
    with log.open("ab") as out:
        proc = await asyncio.create_subprocess_exec(
            "bash",
            "-c",
            command,
            cwd=cwd,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=out,
            stderr=asyncio.subprocess.STDOUT,
            start_new_session=True,
        )
        try:
            return await asyncio.wait_for(proc.wait(), timeout)
        except TimeoutError:
            kill_group(proc)
            await proc.wait()
            return None
        except asyncio.CancelledError:
            kill_group(proc)
            await asyncio.shield(proc.wait())
            raise


def kill_group(proc: asyncio.subprocess.Process) -> None:
    """Kill a process started in its own session, and everything it started."""
    if proc.returncode is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
