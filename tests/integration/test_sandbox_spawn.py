"""``Sandbox.spawn``: a long-lived program with pipes, confined like a command.

For Docker and bubblewrap: the program talks over its stdin and stdout, runs
as the commands' user with their environment (no host secret), cannot write
``.git``, has no network (bubblewrap: not even when commands have it), and
``kill`` ends it. On the host it runs where asked and ``close`` stops it.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
from pathlib import Path

import pytest

from clover_code.tools.sandbox.base import SandboxProcess
from clover_code.tools.sandbox.host import HostSandbox
from clover_code.tools.sandbox.local_job import group_alive
from tests.integration.sandbox_fixtures import KINDS, Space, open_sandbox
from tests.waiting import PATIENCE

pytestmark = pytest.mark.integration

PROBE = (
    "echo uid=$(id -u); echo secret=${CLOVER_TEST_API_TOKEN:-none}; echo pwd=$(pwd); "
    "echo net=$(tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' ' | sort | tr '\\n' ,); "
    "touch .git/planted 2>/dev/null && echo git=written || echo git=refused; "
    'while read line; do echo "got $line"; done'
)


async def lines(proc: SandboxProcess, count: int) -> dict[str, str]:
    found: dict[str, str] = {}
    for _ in range(count):
        line = await asyncio.wait_for(proc.stdout.readline(), PATIENCE)
        key, _, value = line.decode().strip().partition("=")
        found[key] = value
    return found


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("network", [False, True], ids=["offline", "network"])
async def test_a_spawned_program_is_confined_like_a_command(
    kind: str,
    network: bool,
    space: Space,
    request: pytest.FixtureRequest,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("CLOVER_TEST_API_TOKEN", "s3cret")
    subprocess.run(["git", "init", "-q"], cwd=space.root, check=True)
    if os.getuid() == 0:
        subprocess.run(["chown", "-R", f"{space.uid}:{space.gid}", space.root / ".git"], check=True)
    box = open_sandbox(kind, space.root, request, network=network)
    try:
        proc = await box.spawn(["sh", "-c", PROBE])
        seen = await lines(proc, 5)
        await proc.write(b"hello\n")
        echoed = await asyncio.wait_for(proc.stdout.readline(), PATIENCE)
        await proc.kill()
        ended = await asyncio.wait_for(proc.stdout.read(), PATIENCE)
    finally:
        await box.close()
    assert echoed == b"got hello\n" and ended == b""
    assert seen["uid"] == str(space.uid)
    assert seen["secret"] == "none"
    assert Path(seen["pwd"]) == space.root
    assert seen["git"] == "refused" and not (space.root / ".git" / "planted").exists()
    if kind == "bwrap" or not network:
        assert seen["net"] == "lo,", seen["net"]


async def test_on_the_host_close_stops_a_spawned_program(tmp_path: Path) -> None:
    box = HostSandbox(tmp_path)
    proc = await box.spawn(["sh", "-c", "pwd; sleep 1000"])
    assert (await asyncio.wait_for(proc.stdout.readline(), PATIENCE)).decode().strip() == str(
        tmp_path.resolve()
    )
    (group,) = box._groups
    await box.close()
    assert not group_alive(group)
