"""Bubblewrap shows the user's toolchain (PATH, home, virtualenv) but not their credentials.

Real bubblewrap, a real virtualenv made with ``python -m venv`` in a temporary
HOME, and the host's own pytest: the README's example ("fix the failing
test") must be able to run the tests.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from clover_code import protocol as p
from clover_code.outcome.result import parse_stream_line
from clover_code.tools.sandbox.host_view import looks_like_credential
from tests.integration.sandbox_fixtures import Space, open_sandbox
from tests.integration.sse_server import ScriptedServer
from tests.integration.test_headless_e2e import run_clover, sglang

pytestmark = pytest.mark.integration

SECRETS = {".ssh/id_rsa": "SSH-KEY-SECRET", ".config/myapp/api_token": "API-TOKEN-SECRET"}


@pytest.fixture
def home(space: Space) -> Iterator[Path]:
    """A user home outside the workspace, owned by the user commands run as."""
    base = Path(tempfile.mkdtemp(prefix="clover-home-", dir="/var/tmp"))
    base.chmod(0o755)
    try:
        yield base
    finally:
        shutil.rmtree(base, ignore_errors=True)


def _base_python(uid: int) -> str:
    """An interpreter the sandbox user can run (root's own may live in its private home)."""
    if uid == os.getuid():
        return sys.executable
    for candidate in ("/usr/bin/python3", "/usr/local/bin/python3"):
        if os.access(candidate, os.X_OK):
            return candidate
    pytest.skip("no system python3 that the unprivileged test user can run")


def _make_home(home: Path, space: Space) -> Path:
    """A venv with a library, a tool on PATH and two credentials; returns the venv."""
    venv = home / "envs" / "proj"
    subprocess.run(
        [_base_python(space.uid), "-m", "venv", "--without-pip", str(venv)],
        check=True,
        capture_output=True,
    )
    purelib = subprocess.run(
        [
            str(venv / "bin" / "python"),
            "-c",
            "import sysconfig; print(sysconfig.get_paths()['purelib'])",
        ],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    Path(purelib, "probe_lib.py").write_text("VALUE = 'library-from-venv'\n")
    tool = home / "bin" / "host-tool"
    tool.parent.mkdir()
    tool.write_text("#!/bin/sh\necho host-tool-ok\n")
    tool.chmod(0o755)
    for name, text in SECRETS.items():
        path = home / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text + "\n")
        path.chmod(0o600)
    if os.getuid() == 0:
        subprocess.run(["chown", "-R", f"{space.uid}:{space.gid}", str(home)], check=True)
    return venv


async def test_tools_and_venv_are_usable_but_credentials_are_hidden(
    space: Space, home: Path, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    venv = _make_home(home, space)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("PATH", f"{home / 'bin'}:{os.environ['PATH']}")
    monkeypatch.setenv("VIRTUAL_ENV", str(venv))
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "ENV-SECRET")
    box = open_sandbox("bwrap", space.root, request)
    try:
        result = await box.exec(
            "host-tool; python -c 'import probe_lib; print(probe_lib.VALUE)'; "
            "echo home=$HOME venv=$VIRTUAL_ENV; command -v python; env | grep -c SECRET; "
            f"cat ~/.ssh/id_rsa ~/.config/myapp/api_token {home}/.ssh/id_rsa; "
            "ls -A ~/.ssh | wc -l",
            timeout=60,
        )
        out = result.output
        assert "host-tool-ok\n" in out and "library-from-venv\n" in out, out
        assert f"home={home} venv={venv}\n" in out, out
        assert f"{venv}/bin/python\n" in out, out
        for secret in [*SECRETS.values(), "ENV-SECRET"]:
            assert secret not in out, out
        assert out.rstrip().endswith("0"), out  # ~/.ssh is an empty directory in there
        # The home and the venv are read-only; the workspace and /tmp are writable.
        result = await box.exec(
            f"touch ~/planted 2>/dev/null || echo home-refused; "
            f"touch {venv}/planted 2>/dev/null || echo venv-refused; "
            "touch made-here /tmp/scratch && echo writes-ok",
            timeout=30,
        )
        assert result.output.split() == ["home-refused", "venv-refused", "writes-ok"]
        assert not (home / "planted").exists() and not (venv / "planted").exists()
        assert (space.root / "made-here").exists()
    finally:
        await box.close()


def _own_workspace(tmp_path: Path) -> Path:
    """A workspace owned by the user running the tests (root in container CI)."""
    root = tmp_path / "project"
    root.mkdir()
    return root


async def test_the_readme_example_runs_the_projects_failing_test(
    tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """``python3 -m pytest`` inside bubblewrap finds the pytest installed for this user."""
    root = _own_workspace(tmp_path)
    (root / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    (root / "test_calc.py").write_text(
        "from calc import add\n\ndef test_add():\n    assert add(2, 2) == 4\n"
    )
    box = open_sandbox("bwrap", root, request)
    try:
        result = await box.exec("python3 -m pytest --version && python3 -m pytest -q", timeout=120)
    finally:
        await box.close()
    assert "No module named pytest" not in result.output, result.output
    assert result.exit_code == 1 and "1 failed" in result.output, result.output


def test_credential_names() -> None:
    for name in ("api_token", "id_rsa", ".credentials.json", "secrets.yaml", "server.pem", "KEYS"):
        assert looks_like_credential(name), name
    for name in ("keybindings.json", "monkey", "tokenizer.txt", "bin", ".bashrc"):
        assert not looks_like_credential(name), name
    for name in ("token.py", "secrets.py", "secret.sh"):
        assert looks_like_credential(name), name  # outside a project tree: hidden by name
        assert not looks_like_credential(name, in_project=True), name


async def test_headless_fix_the_failing_test_under_bubblewrap(
    scripted_server: ScriptedServer, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """The README's example end to end: the model runs the tests, fixes the code, reruns."""
    request.getfixturevalue("bwrap_works")
    root = _own_workspace(tmp_path)
    (root / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    (root / "test_calc.py").write_text(
        "from calc import add\n\ndef test_add():\n    assert add(2, 2) == 4\n"
    )
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    fix = {"path": "calc.py", "old_string": "return a - b", "new_string": "return a + b"}
    scripted_server.enqueue(
        sglang(lambda s: s.tool_call("shell", {"command": "python3 -m pytest -q"})),
        sglang(lambda s: s.tool_call("edit_file", fix)),
        sglang(lambda s: s.tool_call("shell", {"command": "python3 -m pytest -q"})),
        sglang(lambda s: s.content("Fixed add.")),
    )
    code, out, err = await run_clover(
        root,
        "--task",
        "fix the failing test",
        "--base-url",
        scripted_server.base_url,
        "--sandbox",
        "bwrap",
        "--approval",
        "full-auto",
        "--output-format",
        "stream-json",
        home=tmp_path,
    )
    assert code == 0, err
    events = [parse_stream_line(line) for line in out.splitlines()]
    shells = [e for e in events if isinstance(e, p.ToolCallFinished) and e.name == "shell"]
    assert len(shells) == 2, shells
    assert "No module named pytest" not in shells[0].result
    assert "1 failed" in shells[0].result and "1 passed" in shells[1].result, shells
