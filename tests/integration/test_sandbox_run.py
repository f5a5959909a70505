"""``clover-code sandbox run``: one command in the agent's sandbox, as a real process.

In Docker and bubblewrap the command runs confined (``.git`` read-only, the
exit status passed on); with ``--sandbox none`` the ``.git`` check still puts
back a planted hook; a timeout is 124; every bad input is one sentence.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.integration.test_headless_e2e import run_clover

pytestmark = pytest.mark.integration

PLANT = "printf '#!/bin/sh\\ntouch pwned\\n' > .git/hooks/post-checkout"


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    (root / "sub").mkdir()
    (root / "sub" / "data.txt").write_text("hello\n")
    return root


@pytest.mark.parametrize("kind", [pytest.param("docker", marks=pytest.mark.docker), "bwrap"])
async def test_a_command_runs_confined_and_its_status_comes_back(
    kind: str, workspace: Path, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    request.getfixturevalue("sandbox_image" if kind == "docker" else "bwrap_works")
    code, out, err = await run_clover(
        workspace,
        "sandbox",
        "run",
        "--sandbox",
        kind,
        "-C",
        str(workspace / "sub"),
        "-c",
        f"cat data.txt; cd .. && {PLANT} || echo GIT-READ-ONLY; exit 7",
        home=tmp_path,
    )
    assert code == 7, err
    lines = out.splitlines()  # stdout and stderr come interleaved, as the agent sees them
    assert lines[0] == "hello" and lines[-1] == "GIT-READ-ONLY"
    assert not (workspace / ".git" / "hooks" / "post-checkout").exists()


async def test_on_the_host_a_planted_hook_is_put_back(workspace: Path, tmp_path: Path) -> None:
    code, _, err = await run_clover(
        workspace, "sandbox", "run", "--sandbox", "none", "-c", PLANT, home=tmp_path
    )
    assert code == 0, err
    assert not (workspace / ".git" / "hooks" / "post-checkout").exists()
    assert "clover-code put it back" in err and "--sandbox none" in err


async def test_argv_after_the_dashes_is_quoted_not_parsed(workspace: Path, tmp_path: Path) -> None:
    code, out, _ = await run_clover(
        workspace,
        "sandbox",
        "run",
        "--sandbox",
        "none",
        "--",
        "printf",
        "%s|",
        "a b",
        "$(echo no)",
        home=tmp_path,
    )
    assert code == 0 and out == "a b|$(echo no)|"


async def test_a_command_past_its_timeout_is_124(workspace: Path, tmp_path: Path) -> None:
    code, _, err = await run_clover(
        workspace,
        "sandbox",
        "run",
        "--sandbox",
        "none",
        "--timeout",
        "1",
        "-c",
        "sleep 60",
        home=tmp_path,
    )
    assert code == 124
    assert "ran past 1 s and was stopped" in err


async def test_docker_that_cannot_run_is_exit_3(workspace: Path, tmp_path: Path) -> None:
    code, _, err = await run_clover(
        workspace,
        "sandbox",
        "run",
        "--sandbox",
        "docker",
        "-c",
        "true",
        home=tmp_path,
        extra_env={"DOCKER_HOST": f"unix://{tmp_path}/no-docker.sock"},
    )
    assert code == 3
    assert "--sandbox docker cannot run here" in err and "Traceback" not in err


@pytest.mark.parametrize(
    ("args", "sentence"),
    [
        ((), "no command given; pass -c 'LINE' or -- PROGRAM ARG..."),
        (("-c", "ls", "--", "ls"), "either with -c or after --, not both"),
        (("-c", "  "), "the -c command line is empty"),
        (("--timeout", "0", "-c", "ls"), "--timeout must be more than 0 seconds"),
        (("-C", "/no/such/dir", "-c", "ls"), "/no/such/dir is not a directory"),
    ],
)
async def test_bad_input_is_one_sentence(
    args: tuple[str, ...], sentence: str, workspace: Path, tmp_path: Path
) -> None:
    code, out, err = await run_clover(
        workspace, "sandbox", "run", "--sandbox", "none", *args, home=tmp_path
    )
    assert code == 2, out
    assert sentence in err and "Traceback" not in err
    assert err.count("\n") == 1
