"""Running one hook program: its argv split without a shell, the check before a host
program runs, the event's JSON on stdin, its whole process group killed when it ends,
hangs past its timeout or is interrupted.

``hooks.HookRunner`` judges what the run returns; this module only runs it.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shlex
import signal
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from clover_code.agent.extensions.host_programs import HostPrograms, Refused
from clover_code.config.sections import HookConfig

__all__ = ["HookRun", "run_program"]


@dataclass(slots=True)
class HookRun:
    """How one hook ran: its exit status, output, and the problem that stopped it (as the
    end of a sentence), if one did; ``refused``: the check kept it from running."""

    code: int | None
    stdout: str
    stderr: str
    problem: str | None = None
    refused: bool = False


async def run_program(
    config: HookConfig,
    payload: Mapping[str, Any],
    *,
    root: Path,
    programs: HostPrograms,
    retrust: Callable[[str], Awaitable[bool]] | None,
) -> HookRun:
    """Run ``config``'s command in ``root`` with ``payload`` on stdin, once ``programs``
    cleared it (``retrust`` asks about a trusted script that changed; None: refuse)."""
    try:
        argv = shlex.split(config.command)
    except ValueError as exc:
        return HookRun(None, "", "", f"its command cannot be split into words ({exc})")
    if not argv:
        return HookRun(None, "", "", "its command is empty")
    prepared = programs.prepare(argv)
    changed = prepared.changed if isinstance(prepared, Refused) else None
    # Checked again after the answer: bytes changed since the diff do not run.
    if changed and retrust is not None and await retrust(changed):
        prepared = programs.prepare(argv)
    if isinstance(prepared, Refused):
        return HookRun(None, "", "", f"it was not run: {prepared.reason}.", refused=True)
    env = {**os.environ, "PATH": prepared.path_env, "CLOVER_PROJECT_DIR": str(root)}
    try:
        proc = await asyncio.create_subprocess_exec(
            *prepared.argv,
            cwd=root,
            env=env,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            start_new_session=True,  # its own process group, killed as a whole
        )
    except OSError as exc:
        return HookRun(None, "", "", f"it could not start ({exc.strerror or exc})")
    data = json.dumps(payload).encode()
    try:
        out, err = await asyncio.wait_for(proc.communicate(data), config.timeout)
    except TimeoutError:
        _kill_group(proc.pid)
        await proc.wait()
        return HookRun(
            None, "", "", f"it did not finish within {config.timeout:g} s and was killed"
        )
    except BaseException:
        _kill_group(proc.pid)
        raise
    finally:
        # Children it left behind in its group go too.
        _kill_group(proc.pid)
    stdout = out.decode("utf-8", errors="replace")
    stderr = err.decode("utf-8", errors="replace")
    code = proc.returncode
    if code is not None and code < 0:
        return HookRun(code, stdout, stderr, f"it was killed by {_signal_name(-code)}")
    return HookRun(code, stdout, stderr)


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def _kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)
