"""What a sandboxed command does: output, exit codes, directory, environment, limits.

Runs against a real Docker engine and real bubblewrap (see ``sandbox_fixtures``).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from clover_code.tools.sandbox.base import Sandbox
from clover_code.tools.sandbox.docker import DockerSandbox
from clover_code.tools.sandbox.docker_setup import LABEL, RUNNER_COMMAND
from tests.integration.sandbox_fixtures import KINDS, Space, assert_alive, open_sandbox
from tests.waiting import PATIENCE, async_wait_until, wait_until, within

# Per-process markers: two copies of the suite may run at once on one machine,
# and the host-wide process checks must only see this run's processes.
_RUN = f"{os.getpid():07d}"

pytestmark = pytest.mark.integration


@pytest.mark.parametrize("kind", KINDS)
async def test_output_streams_while_the_command_runs(sandbox: Sandbox, space: Space) -> None:
    # The command waits for a file that the test writes only once "first" has
    # streamed in: output held until the end would leave it waiting until the timeout.
    seen: list[str] = []

    def on_output(text: str) -> None:
        seen.append(text)
        if "first" in "".join(seen):
            (space.root / "go").touch()

    result = await sandbox.exec(
        "echo first; until [ -e go ]; do sleep 0.05; done; echo second",
        timeout=PATIENCE,
        on_output=on_output,
    )
    assert not result.timed_out, "the first line did not stream while the command ran"
    assert result.exit_code == 0
    assert result.output == "first\nsecond\n"
    assert seen and seen[0].startswith("first")
    assert "".join(seen) == "first\nsecond\n"


@pytest.mark.parametrize("kind", KINDS)
async def test_exit_codes(sandbox: Sandbox) -> None:
    assert (await sandbox.exec("true", timeout=30)).exit_code == 0
    assert (await sandbox.exec("exit 7", timeout=30)).exit_code == 7
    assert (await sandbox.exec("sh -c 'kill -9 $$'", timeout=30)).exit_code == 137
    result = await sandbox.exec("echo out; echo err >&2; exit 3", timeout=30)
    assert (result.exit_code, sorted(result.output.split())) == (3, ["err", "out"])


@pytest.mark.docker
@pytest.mark.parametrize("kind", ["docker"])
async def test_the_readmes_example_can_run_the_projects_tests(
    sandbox: Sandbox, space: Space
) -> None:
    """ "Fix the failing test" needs pytest: the built-in image has it. (Bubblewrap
    shows the user's own toolchain: test_sandbox_host_view.py runs pytest there.)"""
    (space.root / "test_calc.py").write_text("def test_add():\n    assert 1 + 1 == 3\n")
    result = await sandbox.exec("python3 -m pytest -q -p no:cacheprovider", timeout=120)
    assert result.exit_code == 1, result.output
    assert "1 failed" in result.output


@pytest.mark.parametrize("kind", KINDS)
async def test_directory_persists_and_stays_in_the_workspace(
    sandbox: Sandbox, space: Space
) -> None:
    await sandbox.exec("mkdir -p sub/deeper && cd sub/deeper", timeout=30)
    assert (await sandbox.exec("pwd", timeout=30)).output == f"{space.root}/sub/deeper\n"
    result = await sandbox.exec("cd /", timeout=30)
    assert "outside the workspace" in result.output
    assert (await sandbox.exec("pwd", timeout=30)).output == f"{space.root}\n"
    await sandbox.exec("mkdir gone && cd gone", timeout=30)
    await sandbox.exec(f"rmdir {space.root}/gone", timeout=30)
    result = await sandbox.exec("pwd", timeout=30)
    assert result.output.startswith(f"{space.root}\n") and "is gone" in result.output


@pytest.mark.parametrize("kind", KINDS)
async def test_environment_does_not_persist(sandbox: Sandbox) -> None:
    await sandbox.exec("export CLOVER_TEST_VAR=1", timeout=30)
    result = await sandbox.exec("echo ${CLOVER_TEST_VAR:-unset}", timeout=30)
    assert result.output == "unset\n"


@pytest.mark.parametrize("kind", KINDS)
async def test_commands_run_as_the_user_never_root(
    kind: str, sandbox: Sandbox, space: Space
) -> None:
    result = await sandbox.exec("id -u; id -g; echo $HOME; touch made-here", timeout=30)
    uid, gid, home = result.output.split()
    assert (int(uid), int(gid)) == (space.uid, space.gid)
    assert int(uid) != 0
    # bubblewrap shows the user's own home (read-only) when they can read it;
    # a user that is not the one running clover-code gets a private one.
    own_home = kind == "bwrap" and os.getuid() == space.uid
    assert home == (os.path.realpath(Path.home()) if own_home else "/home/sandbox")
    assert (space.root / "made-here").stat().st_uid == space.uid


@pytest.mark.parametrize("kind", KINDS)
async def test_timeout_kills_the_command(sandbox: Sandbox) -> None:
    result = await within(
        sandbox.exec(f"echo begun; sleep 1000.0625{_RUN}", timeout=1.5),
        message="the timed-out command to return",
    )
    assert result.timed_out and result.exit_code is None
    assert result.output.startswith("begun")
    await _assert_no_process(sandbox, f"1000.0625{_RUN}")
    await assert_alive(sandbox)


@pytest.mark.parametrize("kind", KINDS)
async def test_cancellation_kills_the_command(sandbox: Sandbox, space: Space) -> None:
    task = asyncio.create_task(
        sandbox.exec(f"touch started; sleep 1000.5{_RUN}", timeout=PATIENCE * 2)
    )
    await async_wait_until((space.root / "started").exists, message="the command to start")
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await within(task, message="the cancelled call to return")
    await _assert_no_process(sandbox, f"1000.5{_RUN}")


@pytest.mark.parametrize("kind", KINDS)
async def test_long_output_is_capped_head_and_tail(sandbox: Sandbox) -> None:
    result = await sandbox.exec("seq 1 200000", timeout=60)
    assert result.exit_code == 0 and result.truncated
    assert result.output.startswith("1\n2\n3\n")
    assert result.output.endswith("199999\n200000\n")
    assert " omitted ...]" in result.output
    assert len(result.output) < 31_000


@pytest.mark.parametrize("kind", KINDS)
async def test_background_holding_output_is_stopped(sandbox: Sandbox) -> None:
    # Waiting for the background sleep would end in the timeout instead.
    result = await sandbox.exec(f"(sleep 1000.25{_RUN} &); echo quick", timeout=PATIENCE)
    assert not result.timed_out
    assert result.exit_code == 0 and result.output.startswith("quick\n")
    await _assert_no_process(sandbox, f"1000.25{_RUN}")


@pytest.mark.docker
@pytest.mark.parametrize("kind", ["docker"])
async def test_docker_background_job_with_redirected_output_lives_on(sandbox: Sandbox) -> None:
    result = await sandbox.exec(f"sleep 1000.75{_RUN} > /dev/null 2>&1 &", timeout=30)
    assert result.exit_code == 0
    assert f"1000.75{_RUN}" in (await sandbox.exec("ps -eo args", timeout=30)).output


# -- Docker container lifecycle -------------------------------------------------


@pytest.mark.docker
async def test_container_is_labelled_and_removed_on_close(
    space: Space, request: pytest.FixtureRequest, docker_engine: Any
) -> None:
    box = open_sandbox("docker", space.root, request)
    assert isinstance(box, DockerSandbox)
    await box.exec("true", timeout=30)
    container = docker_engine.containers.get(box.container_id)
    owner = container.labels[LABEL]
    assert owner.split(":")[:2] == [os.uname().nodename, str(os.getpid())]
    assert container.labels[f"{LABEL}.workspace"] == str(space.root)
    attrs = container.attrs["HostConfig"]
    assert attrs["NetworkMode"] == "none" and attrs["ReadonlyRootfs"] is True
    assert attrs["CapDrop"] == ["ALL"] and "no-new-privileges" in attrs["SecurityOpt"]
    assert attrs["PidsLimit"] == 128 and attrs["Memory"] == 512 * 2**20
    container_id = box.container_id
    await box.close()
    assert not docker_engine.containers.list(all=True, filters={"id": container_id})


@pytest.mark.docker
async def test_stale_containers_of_dead_sessions_are_removed(
    space: Space, request: pytest.FixtureRequest, docker_engine: Any, sandbox_image: str
) -> None:
    dead = _dead_pid()
    here = os.uname().nodename
    stale = docker_engine.containers.create(
        sandbox_image, ["sleep", "1000"], labels={LABEL: f"{here}:{dead}:1"}
    )
    alive = docker_engine.containers.create(
        sandbox_image, ["sleep", "1000"], labels={LABEL: f"{here}:{os.getpid()}:?"}
    )
    try:
        box = open_sandbox("docker", space.root, request)
        await box.exec("true", timeout=30)
        await box.close()
        remaining = {c.id for c in docker_engine.containers.list(all=True)}
        assert stale.id not in remaining
        assert alive.id in remaining
    finally:
        for container in (stale, alive):
            with contextlib.suppress(Exception):
                container.remove(force=True)


@pytest.mark.docker
async def test_unresponsive_container_cannot_hold_the_call(
    space: Space, request: pytest.FixtureRequest, docker_engine: Any
) -> None:
    """A frozen container (the runner cannot enforce the timeout) still returns in time."""
    box = open_sandbox("docker", space.root, request)
    assert isinstance(box, DockerSandbox)
    try:
        await box.exec("true", timeout=30)
        frozen = box.container_id
        # Long enough for the pause to land before the timeout on a busy machine.
        task = asyncio.create_task(box.exec("touch started; sleep 1000", timeout=10))
        await async_wait_until((space.root / "started").exists, message="the command to start")
        await asyncio.to_thread(docker_engine.api.pause, frozen)
        result = await within(task, message="the call on a frozen container to return")
        assert result.timed_out and result.exit_code is None
        assert "did not answer" in result.output
        result = await box.exec("echo fresh", timeout=30)
        assert result.output.startswith("fresh\n") and box.container_id != frozen
    finally:
        await box.close()


@pytest.mark.docker
async def test_the_runner_kills_one_commands_processes_when_asked_from_outside(
    space: Space, request: pytest.FixtureRequest, docker_engine: Any
) -> None:
    """What the sandbox runs through ``docker exec`` when its runner does not answer:
    the runner's ``--kill TOKEN`` ends the processes that carry that command's marker,
    and no other."""
    box = open_sandbox("docker", space.root, request)
    assert isinstance(box, DockerSandbox)
    doomed, spared = f"1000.375{_RUN}", f"1000.4375{_RUN}"
    try:
        started = await box.exec(
            f"env CLOVER_SANDBOX_CMD=doomed{_RUN} sleep {doomed} > /dev/null 2>&1 &\n"
            f"env CLOVER_SANDBOX_CMD=spared{_RUN} sleep {spared} > /dev/null 2>&1 &\n"
            "until [ \"$(ps -eo args | grep -c '^sleep 1000[.]')\" -ge 2 ]; do sleep 0.05; done",
            timeout=PATIENCE,
        )
        assert started.exit_code == 0, started.output
        api = docker_engine.api
        exec_id = api.exec_create(box.container_id, [*RUNNER_COMMAND, "--kill", f"doomed{_RUN}"])
        output = await asyncio.to_thread(api.exec_start, exec_id["Id"])
        assert api.exec_inspect(exec_id["Id"])["ExitCode"] == 0, output
        await _assert_no_process(box, doomed)
        assert spared in (await box.exec("ps -eo args", timeout=30)).output
    finally:
        await box.close()


@pytest.mark.docker
def test_container_goes_away_when_its_session_is_killed(
    space: Space, docker_engine: Any, sandbox_image: str, tmp_path: Path
) -> None:
    script = tmp_path / "session.py"
    script.write_text(
        textwrap.dedent(
            f"""
            import asyncio, sys
            from clover_code.tools.sandbox.docker import DockerSandbox
            async def main():
                box = DockerSandbox({str(space.root)!r}, image={sandbox_image!r})
                await box.exec("true", timeout=30)
                print(box.container_id, flush=True)
                await asyncio.sleep(1000)
            asyncio.run(main())
            """
        )
    )
    root = Path(__file__).resolve().parents[2]
    proc = subprocess.Popen(
        [sys.executable, str(script)], stdout=subprocess.PIPE, text=True, cwd=root
    )
    assert proc.stdout is not None
    container_id = proc.stdout.readline().strip()
    assert container_id, "the session script printed no container id (it failed to start)"
    assert docker_engine.containers.list(filters={"id": container_id})
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    wait_until(
        lambda: not docker_engine.containers.list(all=True, filters={"id": container_id}),
        message="the orphaned container to be removed",
        interval=0.2,
    )


# -- helpers ---------------------------------------------------------------------


async def _assert_no_process(box: Sandbox, marker: str) -> None:
    """No process whose command line contains ``marker`` is left, in the sandbox or here.

    A killed process can take a moment to be reaped: poll with a deadline.
    """
    if box.kind == "docker":
        listing = ""
        for _ in range(int(PATIENCE)):
            listing = (await box.exec("ps -eo args", timeout=30)).output
            if marker not in listing:
                break
            await asyncio.sleep(1)
        assert marker not in listing, f"a process with {marker} is left in the container"

    def host_clear() -> bool:
        found = subprocess.run(["pgrep", "-f", f"sleep {marker}"], capture_output=True, check=False)
        return found.returncode == 1

    await async_wait_until(host_clear, message=f"no host process with {marker} to be left")


def _dead_pid() -> int:
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid
