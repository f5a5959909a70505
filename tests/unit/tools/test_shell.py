"""The host sandbox and the shell tool, running real bash processes."""

from __future__ import annotations

import asyncio
import os
import time
import tracemalloc
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from clover_code.errors import ToolError
from clover_code.tools.base import ToolContext
from clover_code.tools.sandbox.base import Sandbox
from clover_code.tools.sandbox.host import HostSandbox
from clover_code.tools.sandbox.output import HeadTailBuffer, cap_head_tail
from clover_code.tools.shell import ShellArgs, ShellTool
from clover_code.tools.workspace import Workspace
from tests.waiting import PATIENCE, async_wait_until, within


@pytest.fixture
def root(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    (repo / "sub").mkdir(parents=True)
    return repo


@pytest.fixture
async def sandbox(root: Path) -> AsyncIterator[HostSandbox]:
    box = HostSandbox(root)
    yield box
    await box.close()


def _alive(pid: int) -> bool:
    """Whether ``pid`` is a live process (a zombie counts as dead)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False
    return state not in ("Z", "X")


async def _gone(pid: int, within: float = PATIENCE) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if not _alive(pid):
            return True
        await asyncio.sleep(0.05)
    return False


def test_host_sandbox_meets_the_protocol(root: Path) -> None:
    box: Sandbox = HostSandbox(root)
    assert box.kind == "host"


async def test_output_and_exit_code(sandbox: HostSandbox) -> None:
    result = await sandbox.exec("echo out; echo err >&2; echo again; exit 3", timeout=10)
    assert result.output == "out\nerr\nagain\n"
    assert result.exit_code == 3
    assert not result.timed_out and not result.truncated
    assert result.duration > 0


async def test_command_killed_by_signal_reports_128_plus_signal(sandbox: HostSandbox) -> None:
    result = await sandbox.exec("kill -9 $$", timeout=10)
    assert result.exit_code == 137


async def test_stdin_is_closed(sandbox: HostSandbox) -> None:
    # With stdin open, cat would wait for input until the timeout.
    result = await sandbox.exec("cat; read -r line; echo read=$?", timeout=PATIENCE)
    assert not result.timed_out
    assert result.output == "read=1\n"


async def test_output_streams_while_the_command_runs(sandbox: HostSandbox) -> None:
    # The command waits for a file that the test writes only once "first" has
    # streamed in: output held until the end would leave it waiting until the timeout.
    seen: list[str] = []

    def on_output(text: str) -> None:
        seen.append(text)
        if "first" in "".join(seen):
            (sandbox.root / "go").touch()

    result = await sandbox.exec(
        "echo first; until [ -e go ]; do sleep 0.05; done; echo second",
        timeout=PATIENCE,
        on_output=on_output,
    )
    assert not result.timed_out, "the first line did not stream while the command ran"
    assert "".join(seen) == "first\nsecond\n" == result.output


async def test_utf8_split_across_reads_survives(sandbox: HostSandbox, root: Path) -> None:
    box = HostSandbox(root, output_limit=10_000_000)
    try:
        result = await box.exec("python3 -c \"print('é' * 300000)\"", timeout=30)
    finally:
        await box.close()
    assert result.output == "é" * 300000 + "\n"


async def test_timeout_kills_the_whole_process_group(sandbox: HostSandbox, root: Path) -> None:
    result = await within(
        sandbox.exec("sleep 600 & echo $! > bg.pid; sleep 600", timeout=0.5),
        message="the timed-out command to be killed",
    )
    assert result.timed_out and result.exit_code is None
    assert await _gone(int((root / "bg.pid").read_text()))


async def test_timeout_escalates_to_sigkill(sandbox: HostSandbox) -> None:
    # The shell and its background child both ignore SIGTERM (an ignored signal
    # is inherited): only SIGKILL ends them.
    command = "trap '' TERM; echo $$ > main.pid; sleep 600 & echo $! > bg.pid; sleep 600"
    result = await within(
        sandbox.exec(command, timeout=0.5),
        message="the command that ignores SIGTERM to be killed",
    )
    assert result.timed_out
    assert await _gone(int((sandbox.root / "main.pid").read_text()))
    assert await _gone(int((sandbox.root / "bg.pid").read_text()))


async def test_background_child_holding_stdout_does_not_block(
    sandbox: HostSandbox, root: Path
) -> None:
    result = await within(
        sandbox.exec("sleep 600 & echo $! > bg.pid; echo done", timeout=PATIENCE * 2),
        message="the command to return while its background child runs on",
    )
    assert result.exit_code == 0 and not result.timed_out
    assert result.output.startswith("done\n")
    assert "a background process still holds the output open" in result.output
    pid = int((root / "bg.pid").read_text())
    assert _alive(pid)  # left running, like a terminal would
    await sandbox.close()
    assert await _gone(pid)


async def test_timeout_with_background_child_holding_stdout(sandbox: HostSandbox) -> None:
    result = await within(
        sandbox.exec("(sleep 600; echo late) & sleep 600", timeout=0.5),
        message="the timed-out command to return despite its child holding stdout",
    )
    assert result.timed_out


async def test_cancellation_kills_the_group_and_propagates(
    sandbox: HostSandbox, root: Path
) -> None:
    task = asyncio.create_task(sandbox.exec("sleep 60 & echo $! > bg.pid; sleep 60", timeout=60))
    await async_wait_until(
        lambda: (root / "bg.pid").exists() and bool((root / "bg.pid").read_text().strip()),
        message="the background pid to be written",
    )
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await _gone(int((root / "bg.pid").read_text()))
    # The sandbox still works afterwards.
    assert (await sandbox.exec("echo ok", timeout=10)).output == "ok\n"


async def test_output_is_capped_head_and_tail_with_a_marker(root: Path) -> None:
    box = HostSandbox(root, output_limit=1000)
    try:
        result = await box.exec("echo START; yes middle | head -n 100000; echo END", timeout=30)
    finally:
        await box.close()
    total = len("START\n") + 100000 * len("middle\n") + len("END\n")
    assert result.truncated
    assert result.output.startswith("START\nmiddle\n")
    assert result.output.endswith("middle\nEND\n")
    assert total - 1000 == 699_010
    assert "\n[... 699.0 kB omitted ...]\n" in result.output


async def test_huge_output_keeps_memory_bounded(root: Path) -> None:
    box = HostSandbox(root, output_limit=30_000)
    tracemalloc.start()
    try:
        result = await box.exec("yes | head -c 300000000", timeout=120)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
        await box.close()
    assert result.exit_code == 0 and result.truncated
    assert "[... 300.0 MB omitted ...]" in result.output  # 299,970,000 bytes
    assert peak < 20 * 1024 * 1024


async def test_live_output_stops_at_the_stream_limit(root: Path) -> None:
    box = HostSandbox(root, stream_limit=1000)
    streamed: list[str] = []
    try:
        await box.exec("yes | head -c 100000", timeout=30, on_output=streamed.append)
    finally:
        await box.close()
    text = "".join(streamed)
    assert text.startswith("y\n" * 500)
    assert "live output stops here" in text
    assert len(text) < 1200


async def test_working_directory_persists(sandbox: HostSandbox, root: Path) -> None:
    assert (await sandbox.exec("cd sub", timeout=10)).exit_code == 0
    assert (await sandbox.exec("pwd", timeout=10)).output == f"{root / 'sub'}\n"
    await sandbox.exec("cd ..", timeout=10)
    assert (await sandbox.exec("pwd", timeout=10)).output == f"{root}\n"


async def test_cd_after_exit_with_error_still_persists(sandbox: HostSandbox, root: Path) -> None:
    result = await sandbox.exec("cd sub && exit 4", timeout=10)
    assert result.exit_code == 4
    assert (await sandbox.exec("pwd", timeout=10)).output == f"{root / 'sub'}\n"


async def test_leaving_the_workspace_resets_to_root(sandbox: HostSandbox, root: Path) -> None:
    result = await sandbox.exec("cd /", timeout=10)
    assert "outside the workspace; the next command starts in" in result.output
    assert (await sandbox.exec("pwd", timeout=10)).output == f"{root}\n"


async def test_deleted_working_directory_resets_to_root(sandbox: HostSandbox, root: Path) -> None:
    (root / "tmpdir").mkdir()
    await sandbox.exec("cd tmpdir", timeout=10)
    (root / "tmpdir").rmdir()
    result = await sandbox.exec("pwd", timeout=10)
    assert result.output.startswith(f"{root}\n")
    assert "is gone; commands now start in" in result.output


async def test_environment_does_not_persist(sandbox: HostSandbox) -> None:
    await sandbox.exec("export CLOVER_TEST_VAR=set; alias ll=ls", timeout=10)
    result = await sandbox.exec('echo "${CLOVER_TEST_VAR:-unset}"; type ll || true', timeout=10)
    assert result.output.startswith("unset\n")
    assert "not found" in result.output


async def test_close_kills_leftover_processes(root: Path) -> None:
    box = HostSandbox(root)
    await box.exec("nohup sleep 100 > /dev/null 2>&1 & echo $! > bg.pid", timeout=10)
    pid = int((root / "bg.pid").read_text())
    assert _alive(pid)
    await box.close()
    assert await _gone(pid)


def test_head_tail_buffer_bounds() -> None:
    buffer = HeadTailBuffer(10)
    for _ in range(1000):
        buffer.write("abcdefghij")
    assert buffer.text() == "abcde\n[... 10.0 kB omitted ...]\nfghij"
    assert cap_head_tail("short", 10) == ("short", False)
    assert cap_head_tail("0123456789AB", 10) == (
        "01234\n[... 2 bytes omitted ...]\n789AB",
        True,
    )


# --- the shell tool ------------------------------------------------------------------------


async def test_shell_tool_without_sandbox_says_how_to_enable(root: Path) -> None:
    ctx = ToolContext(workspace=Workspace(root))
    with pytest.raises(ToolError) as info:
        await ShellTool().run(ShellArgs(command="ls"), ctx)
    assert "no sandbox is configured" in str(info.value)
    assert "`--sandbox none` runs commands on the host" in str(info.value)


async def test_shell_tool_reports_output_exit_code_and_duration(
    sandbox: HostSandbox, root: Path
) -> None:
    streamed: list[str] = []
    ctx = ToolContext(workspace=Workspace(root), sandbox=sandbox, on_output=streamed.append)
    result = await ShellTool().run(ShellArgs(command="echo hi; exit 2", description="say hi"), ctx)
    assert result.text.startswith("hi\nexit code 2 (")
    assert result.text.endswith(" s)")
    assert result.display.exit_code == 2
    assert result.display.timed_out is False
    assert isinstance(result.display.duration, float) and result.display.duration >= 0
    assert not result.is_error
    assert streamed == ["hi\n"]
    assert ShellTool().summary(ShellArgs(command="echo hi", description="say hi")) == "say hi"


async def test_shell_tool_timeout_is_capped_by_context(sandbox: HostSandbox, root: Path) -> None:
    ctx = ToolContext(workspace=Workspace(root), sandbox=sandbox, shell_timeout=0.5)
    # The model asked for 100 s of a 600 s command; the context's 0.5 s wins.
    result = await within(
        ShellTool().run(ShellArgs(command="sleep 600", timeout=100), ctx),
        message="the shell tool to time out",
    )
    assert result.is_error
    assert result.display.timed_out is True
    assert result.display.exit_code is None
    assert "timed out after 0.5 s" in result.text


async def test_shell_tool_output_limit_and_empty_output(sandbox: HostSandbox, root: Path) -> None:
    ctx = ToolContext(workspace=Workspace(root), sandbox=sandbox, output_limit=100)
    result = await ShellTool().run(ShellArgs(command="seq 1 10000"), ctx)
    assert " omitted ...]" in result.text
    assert result.display.truncated is True
    quiet = await ShellTool().run(ShellArgs(command="true"), ctx)
    assert quiet.text.startswith("(no output)\nexit code 0")


def test_shell_description_explains_what_persists() -> None:
    text = ShellTool.description
    assert "working directory persists" in text
    assert "Environment variables" in text and "do not persist" in text
    assert os.sep == "/"  # the host sandbox is for POSIX systems
