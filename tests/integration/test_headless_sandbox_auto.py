"""The quick start as a new user runs it: `clover-code --base-url URL --task ...`, no
other flag, against a scripted model server.

Headless mode defaults to the approval mode ``sandbox-auto``: the model's
commands run without asking inside bubblewrap (Docker is made unreachable, so
``--sandbox auto`` picks bubblewrap), never on the host; where no sandbox can
run, the first line of output says so and how to get one.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from tests.integration.sse_server import ScriptedServer
from tests.integration.test_headless_e2e import run_clover, sglang

pytestmark = pytest.mark.integration

TEST_CMD = "python3 -m pytest -q -p no:cacheprovider"


@pytest.fixture
def failing_repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    (root / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    (root / "test_calc.py").write_text(
        "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"
    )
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    return root


def _no_docker(tmp_path: Path) -> dict[str, str]:
    return {"DOCKER_HOST": f"unix://{tmp_path}/no-docker.sock"}


def _tool_results(server: ScriptedServer) -> list[str]:
    last = server.chat_requests[-1].json()["messages"]
    return [str(m["content"]) for m in last if m["role"] == "tool"]


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed")
async def test_quick_start_fixes_a_failing_test_in_bubblewrap(
    scripted_server: ScriptedServer, failing_repo: Path, tmp_path: Path
) -> None:
    scripted_server.enqueue(
        sglang(lambda s: s.tool_call("shell", {"command": TEST_CMD})),
        sglang(
            lambda s: s.tool_call(
                "edit_file",
                {"path": "calc.py", "old_string": "return a - b", "new_string": "return a + b"},
            )
        ),
        sglang(lambda s: s.tool_call("shell", {"command": TEST_CMD})),
        sglang(lambda s: s.content("Fixed add; the test passes.")),
    )
    code, out, err = await run_clover(
        failing_repo,
        "--base-url",
        scripted_server.base_url,
        "--task",
        "fix the failing test",
        home=tmp_path,
        extra_env=_no_docker(tmp_path),
    )
    assert code == 0, err
    assert out.strip() == "Fixed add; the test passes."
    assert (failing_repo / "calc.py").read_text() == "def add(a, b):\n    return a + b\n"
    first_run, _edit, second_run = _tool_results(scripted_server)
    assert "1 failed" in first_run and "exit code 1" in first_run
    assert "1 passed" in second_run and "exit code 0" in second_run
    assert err.splitlines()[0].startswith("info: shell commands run in a bubblewrap sandbox")
    # The failed run shows how it ended and its last lines, as the app's card does.
    lines = err.splitlines()
    shown = lines.index(f"» shell {TEST_CMD}")
    assert lines[shown + 1] == "  exit 1:"
    assert any("1 failed" in line for line in lines[shown + 2 : shown + 12])
    assert "needs approval" not in err


async def test_without_a_sandbox_the_first_line_says_how_to_get_one(
    scripted_server: ScriptedServer, failing_repo: Path, tmp_path: Path
) -> None:
    scripted_server.enqueue(sglang(lambda s: s.content("I cannot run the tests here.")))
    bin_dir = tmp_path / "bin"  # git only: no bwrap on PATH
    bin_dir.mkdir()
    (bin_dir / "git").symlink_to(shutil.which("git") or "/usr/bin/git")
    code, out, err = await run_clover(
        failing_repo,
        "--base-url",
        scripted_server.base_url,
        "--task",
        "fix the failing test",
        home=tmp_path,
        extra_env={**_no_docker(tmp_path), "PATH": str(bin_dir)},
    )
    assert code == 0, err
    assert out.strip() == "I cannot run the tests here."
    first = err.splitlines()[0]
    assert first.startswith("warning: no sandbox can run here, so the shell tool is off")
    for command in (
        "sudo apt-get install bubblewrap",
        "sudo dnf install bubblewrap",
        "sudo pacman -S bubblewrap",
        "brew install --cask docker",
    ):
        assert command in first
    assert "Docker Desktop" in first
    assert len(err.splitlines()) == 1


async def test_on_the_host_sandbox_auto_refuses_commands(
    scripted_server: ScriptedServer, failing_repo: Path, tmp_path: Path
) -> None:
    """--sandbox none gives no containment: sandbox-auto is auto-edit there."""
    scripted_server.enqueue(
        sglang(lambda s: s.tool_call("shell", {"command": "touch PWNED"})),
        sglang(
            lambda s: s.tool_call(
                "edit_file",
                {"path": "calc.py", "old_string": "return a - b", "new_string": "return a + b"},
            )
        ),
        sglang(lambda s: s.content("Edited without running anything.")),
    )
    code, _out, err = await run_clover(
        failing_repo,
        "--base-url",
        scripted_server.base_url,
        "--task",
        "fix it",
        "--sandbox",
        "none",
        "--output-format",
        "text",
        home=tmp_path,
    )
    assert code == 0, err
    assert not (failing_repo / "PWNED").exists()
    assert "return a + b" in (failing_repo / "calc.py").read_text()
    refusal = next(line for line in err.splitlines() if "denied" in line)
    assert refusal.startswith("  denied: shell needs approval") and refusal.count("denied:") == 1
    assert "--approval full-auto" in refusal
