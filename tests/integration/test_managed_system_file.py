"""The system file ``/etc/clover-code/managed.toml``, put in place in a mount namespace.

clover-code reads that path in every process and offers no way to read
another instead (``CLOVER_MANAGED_SETTINGS`` only adds a file). So these tests
run clover-code under bubblewrap with a tmpfs over ``/etc`` that holds the
host's ``/etc`` entries plus a managed file at the real path: the host's
``/etc`` is never written, and the code under test is the production path.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.waiting import missing, need_program

pytestmark = pytest.mark.integration

SYSTEM_FILE = "/etc/clover-code/managed.toml"


def namespace(managed: Path) -> list[str]:
    """bwrap arguments: the host's root, with ``managed`` at the system file's path."""
    args = ["bwrap", "--die-with-parent", "--dev-bind", "/", "/", "--tmpfs", "/etc"]
    for entry in sorted(os.listdir("/etc")):
        if entry == "clover-code":
            continue  # a real one on this machine is replaced by the test's
        source = f"/etc/{entry}"
        if os.path.islink(source):
            args += ["--symlink", os.readlink(source), source]
        else:
            args += ["--bind", source, source]
    return [*args, "--ro-bind", str(managed), SYSTEM_FILE]


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    need_program("bwrap", "bubblewrap")
    probe = subprocess.run(
        [*namespace(Path("/dev/null")), "true"], capture_output=True, text=True, check=False
    )
    if probe.returncode != 0:
        missing(
            f"bubblewrap cannot make a mount namespace here ({probe.stderr.strip()})",
            "the sandbox tests need the same namespaces",
        )
    root = tmp_path / "repo"
    root.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    return root


def clover(
    repo: Path, system: Path | None, *args: str, extra: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """``clover-code ARGS`` in ``repo``, with ``system`` as the system file (None: none)."""
    home = repo.parent
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / "config"),
        "XDG_DATA_HOME": str(home / "data"),
    }
    if extra is not None:
        env["CLOVER_MANAGED_SETTINGS"] = str(extra)
    command = [sys.executable, "-m", "clover_code", *args]
    if system is not None:
        command = [*namespace(system), *command]
    return subprocess.run(
        command,
        cwd=repo,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


TASK = ("--task", "hi", "--base-url", "http://127.0.0.1:9/v1", "--output-format", "json")


def error_of(done: subprocess.CompletedProcess[str]) -> str:
    result = json.loads(done.stdout)
    return str(result["error"])


def test_the_system_file_is_read_and_refuses_what_it_forbids(repo: Path, tmp_path: Path) -> None:
    system = tmp_path / "system.toml"
    system.write_text('[limits]\nmax_approval = "ask"\n')
    done = clover(repo, system, *TASK, "--approval", "full-auto")
    assert done.returncode == 2, done.stderr
    assert error_of(done) == (
        '--approval full-auto is refused because max_approval = "ask" is set by your '
        f"administrator in {SYSTEM_FILE}."
    )
    # Without it the same run gets past the settings (to the unreachable server).
    assert clover(repo, None, *TASK, "--approval", "full-auto").returncode == 3


@pytest.mark.parametrize("extra_text", ["", '[limits]\nmax_approval = "full-auto"\n'])
def test_the_variables_file_cannot_escape_the_system_file(
    repo: Path, tmp_path: Path, extra_text: str
) -> None:
    """Pointing CLOVER_MANAGED_SETTINGS at an empty or a looser file changes nothing."""
    system = tmp_path / "system.toml"
    system.write_text('[limits]\nmax_approval = "ask"\n')
    extra = tmp_path / "extra.toml"
    extra.write_text(extra_text)
    done = clover(repo, system, *TASK, "--approval", "auto-edit", extra=extra)
    assert done.returncode == 2, done.stderr
    assert f"is set by your administrator in {SYSTEM_FILE}." in error_of(done)


def test_the_two_files_merge_into_the_stricter_policy(repo: Path, tmp_path: Path) -> None:
    system = tmp_path / "system.toml"
    system.write_text(
        'max_turns = 20\n[limits]\nmax_approval = "auto-edit"\nforbidden_sandboxes = ["none"]\n'
    )
    extra = tmp_path / "extra.toml"
    extra.write_text('max_turns = 50\n[limits]\nmax_approval = "plan"\ndisabled = ["hooks"]\n')
    # The stricter ceiling is the variable's file's; the forbidden sandbox is the system's.
    ask = clover(repo, system, *TASK, "--approval", "ask", extra=extra)
    assert ask.returncode == 2
    assert error_of(ask).endswith(f'max_approval = "plan" is set by your administrator in {extra}.')
    host = clover(repo, system, *TASK, "--approval", "plan", "--sandbox", "none", extra=extra)
    assert host.returncode == 2
    assert error_of(host).endswith(f"is set by your administrator in {SYSTEM_FILE}.")
    # A fixed value both set: the system file's, whatever the variable's file says.
    report = clover(repo, system, "doctor", "--no-server", "--json", extra=extra)
    checks = [c for c in json.loads(report.stdout)["checks"] if c["area"] == "managed"]
    assert [c["detail"] for c in checks if c["name"] == "file"] == [SYSTEM_FILE, str(extra)]
    rows = {c["name"]: c["detail"] for c in checks}
    assert rows["max_turns"] == f"fixed to 20 in {SYSTEM_FILE}"
    assert rows["max_approval"].startswith("plan")
    assert rows["disabled"] == f'["hooks"] in {extra}'
