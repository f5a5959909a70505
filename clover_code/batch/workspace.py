"""A batch task's own workspace: a clone of its repository at its base commit.

Cloning and checkout go through ``clover_code.git.safe`` (no hooks, filters or
other programs the repository configures). A local repository is cloned
without hard links, so nothing the agent does reaches the original.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import os
import shutil
import signal
from pathlib import Path

from clover_code.batch.launch import Launcher, Proc
from clover_code.git.safe import last_line, run_git


class WorkspaceError(Exception):
    """The workspace could not be made (one sentence)."""


def prepare(source: str, base_commit: str | None, workspaces: Path, slug: str) -> Path:
    """Clone ``source`` into a new folder of ``workspaces`` named after ``slug`` and
    check out ``base_commit``; returns the folder.

    Nothing already there is deleted: a folder left by an earlier run (an
    interrupted task) stays, and this run's clone goes to ``SLUG~2`` (``~N``),
    a name no slug can take.
    """
    workspaces.mkdir(parents=True, exist_ok=True)
    dest = _new_folder(workspaces, slug)
    clone = run_git(
        "clone",
        "-q",
        "--no-hardlinks",
        source,
        str(dest),
        cwd=workspaces,
        check=False,
        timeout=3600.0,
    )
    if clone.returncode != 0:
        shutil.rmtree(dest, ignore_errors=True)  # made by this call, a moment ago
        raise WorkspaceError(f"cannot clone {source}: {last_line(clone.stderr)}.")
    if base_commit:
        checkout = run_git("checkout", "-q", "--detach", base_commit, cwd=dest, check=False)
        if checkout.returncode != 0:
            raise WorkspaceError(
                f"cannot check out {base_commit} in {source}: {last_line(checkout.stderr)}."
            )
    return dest


def _new_folder(workspaces: Path, slug: str) -> Path:
    """A folder of ``workspaces`` this call creates (so it is this run's own)."""
    if slug in ("", ".", "..") or "/" in slug or os.sep in slug:
        raise WorkspaceError(f"the task id {slug!r} cannot name a folder.")
    for attempt in itertools.count(1):
        dest = workspaces / (slug if attempt == 1 else f"{slug}~{attempt}")
        try:
            dest.mkdir()
        except FileExistsError:
            continue
        except OSError as exc:
            raise WorkspaceError(f"cannot create {dest}: {exc.strerror}.") from None
        return dest
    raise AssertionError("unreachable")


TIMED_OUT = 124
"""The exit status of a setup or test command that ran past its time (as ``timeout(1)``)."""

STOP_GRACE_S = 10.0
"""How long a stopped task may take to close its sandbox before it is killed."""


async def run_sandboxed(
    command: str,
    cwd: Path,
    log: Path,
    timeout: float,
    sandbox_args: list[str],
    launcher: Launcher,
) -> int:
    """Run a setup or test command with ``clover-code sandbox run`` in ``cwd``'s sandbox;
    its output goes to ``log``. Returns its exit status (``TIMED_OUT`` past ``timeout``)."""
    argv = ["sandbox", "run", "-C", str(cwd), *sandbox_args]
    argv += ["--timeout", f"{timeout:g}", "-c", command]
    with log.open("ab") as out:
        out.write(f"$ {command}\n".encode())
        out.flush()
        proc = await launcher.start(argv, cwd, out)
        try:
            # The command stops itself at ``timeout``; this bound is for a stuck sandbox.
            return await asyncio.wait_for(proc.wait(), timeout + 2 * STOP_GRACE_S)
        except TimeoutError:
            await stop_group(proc, grace=0.0)
            return TIMED_OUT
        except asyncio.CancelledError:
            await asyncio.shield(stop_group(proc))
            raise


async def stop_group(proc: Proc, grace: float = STOP_GRACE_S) -> None:
    """Stop a process started in its own session, and everything it started: Ctrl+C
    first (so it closes its sandbox and writes its result), then SIGKILL after ``grace``."""
    if proc.returncode is None and grace > 0:
        _signal(proc, signal.SIGINT)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(proc.wait(), grace)
    _signal(proc, signal.SIGKILL)
    await proc.wait()


def _signal(proc: Proc, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, sig)
