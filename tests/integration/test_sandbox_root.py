"""clover-code as root on a root-owned workspace (container CI): commands still unprivileged.

Real headless runs (``python -m clover_code --task``) against the scripted
model server, with real bubblewrap and Docker: the model's shell call must
run, write into the workspace (the file lands on the host, owned by root) and
nothing else, and run without any capability; under bubblewrap as the
unprivileged uid 65534, under Docker as uid 0 with no capabilities. An
explicit ``--sandbox`` that cannot run stops the task with exit code 3.

The root-only tests skip when the suite does not run as root (they need a
root-owned workspace and clover-code running as root).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from clover_code import protocol as p
from clover_code.outcome.result import parse_stream_line
from clover_code.tools.sandbox.base import Sandbox
from clover_code.tools.sandbox.policy import INNER_ID
from tests.integration.sandbox_fixtures import KINDS, TEST_UID, open_sandbox
from tests.integration.sse_server import ScriptedServer
from tests.integration.test_headless_e2e import run_clover, sglang

pytestmark = pytest.mark.integration

as_root = pytest.mark.skipif(
    os.getuid() != 0, reason="needs clover-code running as root on a root-owned workspace"
)

NO_CAPS = "0000000000000000"
PLANTED = f"/etc/clover-planted-{uuid.uuid4().hex[:12]}"
"""What a sandbox escape would make on the host: named per run, so that two runs at
once never see each other's file."""


@pytest.fixture
def outside() -> Iterator[Path]:
    """A root-owned directory no sandbox mounts writable (under /var/tmp)."""
    path = Path(tempfile.mkdtemp(prefix="clover-root-outside-", dir="/var/tmp"))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def root_repo(tmp_path: Path) -> Path:
    """A git repository owned by root (the test runs as root), like a CI checkout."""
    root = tmp_path / "checkout"
    root.mkdir()
    (root / "README").write_text("ci checkout\n")
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    assert root.stat().st_uid == 0
    return root


def _probe(outside: Path) -> str:
    """The command the scripted model runs: who am I, make a file, try to escape."""
    return (
        "echo uid=$(id -u); grep -E '^(CapEff|CapBnd|NoNewPrivs)' /proc/self/status; "
        "touch made.txt && echo made-ok; "
        f"touch {outside}/escaped.txt 2>/dev/null && echo ESCAPED || echo outside-refused; "
        f"touch {PLANTED} 2>/dev/null && echo ETC-WRITTEN || echo etc-refused"
    )


def _path_without_bwrap(tmp_path: Path) -> str:
    """A PATH with git but no bwrap: bubblewrap really is not there."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    git = shutil.which("git")
    assert git is not None
    (bin_dir / "git").symlink_to(git)
    return str(bin_dir)


@as_root
@pytest.mark.parametrize(
    ("kind", "used"),
    [
        ("auto", "bwrap"),  # both work here: bubblewrap wins as root (an unprivileged uid)
        ("bwrap", "bwrap"),
        pytest.param("docker", "docker", marks=pytest.mark.docker),
        pytest.param("auto-without-bwrap", "docker", marks=pytest.mark.docker),
    ],
)
async def test_headless_task_as_root_runs_commands_without_privilege(
    kind: str,
    used: str,
    scripted_server: ScriptedServer,
    root_repo: Path,
    outside: Path,
    tmp_path: Path,
    request: pytest.FixtureRequest,
) -> None:
    env: dict[str, str] = {}
    if used == "docker":
        request.getfixturevalue("sandbox_image")
    else:
        request.getfixturevalue("bwrap_works")
    if kind == "auto-without-bwrap":
        kind, env["PATH"] = "auto", _path_without_bwrap(tmp_path)
    scripted_server.enqueue(
        sglang(lambda s: s.tool_call("shell", {"command": _probe(outside)})),
        sglang(lambda s: s.content("Ran it.")),
    )
    code, out, err = await run_clover(
        root_repo,
        "--task",
        "probe",
        "--base-url",
        scripted_server.base_url,
        "--sandbox",
        kind,
        "--approval",
        "full-auto",
        "--output-format",
        "stream-json",
        home=tmp_path,
        extra_env=env,
    )
    assert code == 0, err
    events = [parse_stream_line(line) for line in out.splitlines()]
    shells = [e for e in events if isinstance(e, p.ToolCallFinished) and e.name == "shell"]
    assert len(shells) == 1 and shells[0].status == "ok", shells
    result = shells[0].result
    started = next(e for e in events if isinstance(e, p.SessionStarted))
    assert started.sandbox == used
    expected_uid = INNER_ID if used == "bwrap" else 0
    assert f"uid={expected_uid}\n" in result
    assert f"CapEff:\t{NO_CAPS}" in result and f"CapBnd:\t{NO_CAPS}" in result
    assert "NoNewPrivs:\t1" in result
    assert "made-ok" in result and "outside-refused" in result and "etc-refused" in result
    made = root_repo / "made.txt"
    assert made.is_file() and made.stat().st_uid == 0  # on the host, owned by the checkout's owner
    assert not (outside / "escaped.txt").exists() and not Path(PLANTED).exists()
    notices = " ".join(e.text for e in events if isinstance(e, p.Notice))
    if used == "bwrap":
        assert f"unprivileged uid {INNER_ID}" in notices, notices
    else:
        assert "uid 0 with no capabilities" in notices, notices
    if "PATH" in env:
        assert "(bubblewrap: bubblewrap (bwrap) is not installed" in notices, notices


@pytest.mark.parametrize(
    ("kind", "hide"),
    [("bwrap", "path"), ("docker", "socket")],
)
async def test_explicit_sandbox_that_cannot_run_exits_3(
    kind: str, hide: str, scripted_server: ScriptedServer, tmp_path: Path
) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    env: dict[str, str] = {}
    if hide == "path":
        env["PATH"] = _path_without_bwrap(tmp_path)
    else:
        env["DOCKER_HOST"] = f"unix://{tmp_path}/no-docker.sock"
    scripted_server.enqueue(sglang(lambda s: s.tool_call("shell", {"command": "touch PWNED"})))
    for output_format in ("text", "json"):
        code, out, err = await run_clover(
            repo,
            "--task",
            "run it",
            "--base-url",
            scripted_server.base_url,
            "--sandbox",
            kind,
            "--approval",
            "full-auto",
            "--output-format",
            output_format,
            home=tmp_path,
            extra_env=env,
        )
        assert code == 3, (out, err)
        assert err.startswith(f"clover-code: --sandbox {kind} cannot run here: ")
        assert "Traceback" not in err and len(err.strip().splitlines()) == 1
        if output_format == "json":
            assert json.loads(out)["exit_code"] == 3
    assert scripted_server.chat_requests == []  # the task never started
    assert not (repo / "PWNED").exists()


@as_root
@pytest.mark.parametrize("kind", KINDS)
async def test_root_sandbox_cannot_gain_or_use_privilege(
    kind: str, root_repo: Path, request: pytest.FixtureRequest
) -> None:
    box: Sandbox = open_sandbox(kind, root_repo, request)
    try:
        checks = {
            "mount": "mount -t tmpfs none /tmp",
            "userns": "unshare -U true",
            "sysctl": "echo sandbox > /proc/sys/kernel/hostname",
            "chown": "touch own.txt && chown 4242 own.txt",
            "etc": f"touch {PLANTED}",
        }
        for name, command in checks.items():
            result = await box.exec(f"{command} 2>&1", timeout=30)
            assert result.exit_code not in (0, None), (name, result.output)
            assert "not found" not in result.output, (name, result.output)
        assert (root_repo / "own.txt").stat().st_uid == 0  # made, but not given away
        if kind == "bwrap":
            # root-only host secrets stay unreadable though their owner bits are root's
            result = await box.exec("cat /etc/shadow 2>&1; ls -A /etc/ssh 2>&1", timeout=30)
            assert "root:" not in result.output and "ssh_host" not in result.output
    finally:
        await box.close()


@as_root
@pytest.mark.parametrize("kind", KINDS)
async def test_root_sandbox_leaves_no_setuid_file(
    kind: str, root_repo: Path, request: pytest.FixtureRequest
) -> None:
    """bubblewrap's ``--seccomp`` and the Docker runner's own filter refuse setuid modes."""
    box: Sandbox = open_sandbox(kind, root_repo, request)
    try:
        made = await box.exec("cp /bin/true prog && chmod 755 prog && echo chmod-ok", timeout=30)
        assert "chmod-ok" in made.output, made.output
        refused = {
            "chmod u+s": "chmod u+s prog",
            "chmod g+s": "chmod g+s prog",
            "chmod 2755": "chmod 2755 prog",
            "install -m 4755": "install -m 4755 /bin/true prog2",
            "open 0o4755": (
                "python3 -c \"import os; os.open('prog3', os.O_CREAT | os.O_WRONLY, 0o4755)\""
            ),
        }
        for name, command in refused.items():
            result = await box.exec(f"{command} 2>&1", timeout=30)
            assert result.exit_code not in (0, None), (name, result.output)
            assert "Operation not permitted" in result.output, (name, result.output)
        work = await box.exec(
            "python3 -c \"import os; os.open('plain', os.O_CREAT | os.O_WRONLY, 0o644)\" "
            "&& echo 'int main(void) { return 7; }' > seven.c && cc -o seven seven.c "
            "&& chmod 755 seven; ./seven; echo ran=$?; git status --short 2>&1",
            timeout=60,
        )
        assert "ran=7" in work.output, work.output
        assert "?? plain" in work.output and "?? seven" in work.output, work.output
    finally:
        await box.close()
    made_files = [path for path in root_repo.iterdir() if path.name != ".git"]
    assert {path.name for path in made_files} >= {"prog", "plain", "seven.c", "seven"}
    for path in made_files:
        assert path.stat().st_mode & 0o6000 == 0, path  # no setuid/setgid bit on the host
        assert path.stat().st_uid == 0


@as_root
@pytest.mark.parametrize("kind", KINDS)
async def test_a_workspace_of_group_root_gets_no_setgid_file(
    kind: str, request: pytest.FixtureRequest
) -> None:
    """A regular user's workspace with group root: commands run as that uid and gid 0,
    so a setgid file they made would hand the root group to whoever runs it."""
    base = Path(tempfile.mkdtemp(prefix="clover-group-root-", dir="/tmp"))
    base.chmod(0o755)
    root = base / "shared"
    root.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    for path in (root, *root.rglob("*")):
        os.chown(path, TEST_UID, 0)
    box: Sandbox = open_sandbox(kind, root, request)
    try:
        made = await box.exec("id -g; cp /bin/true prog && chmod 755 prog && echo ok", timeout=30)
        assert made.output.split()[-1] == "ok", made.output
        for command in ("chmod g+s prog", "chmod 2755 prog", "install -m 2755 /bin/true p2"):
            result = await box.exec(f"{command} 2>&1", timeout=30)
            assert result.exit_code not in (0, None), (command, result.output)
            assert "Operation not permitted" in result.output, (command, result.output)
        prog = root / "prog"
        assert prog.stat().st_gid == 0 and prog.stat().st_mode & 0o6000 == 0
    finally:
        await box.close()
        shutil.rmtree(base, ignore_errors=True)
