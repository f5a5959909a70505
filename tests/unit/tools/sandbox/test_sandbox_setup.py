"""Sandbox setup that needs no Docker: image tag, environment policy, user, selection, CLI."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from clover_code.cli.sandbox import main as sandbox_main
from clover_code.errors import ToolError
from clover_code.tools.sandbox.docker_setup import root_filter, support_files
from clover_code.tools.sandbox.image import DEFINITION_FILES, image_tag, sandbox_dir
from clover_code.tools.sandbox.policy import (
    looks_secret,
    runs_as_root,
    sandbox_env,
    sandbox_user,
)
from clover_code.tools.sandbox.seccomp import setuid_filter
from clover_code.tools.sandbox.select import choose_sandbox

NO_DOCKER = "unix:///nonexistent/clover-test-docker.sock"


def test_python_and_build_offline_agree_on_the_tag() -> None:
    script = sandbox_dir() / "build-offline"
    printed = subprocess.run(
        [str(script), "--print-tag"], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert printed == image_tag()
    assert printed.startswith("clover-code-sandbox:") and len(printed.split(":")[1]) == 12


def test_tag_changes_with_the_definition(tmp_path: Path) -> None:
    copy = tmp_path / "sandbox"
    shutil.copytree(sandbox_dir(), copy)
    before = image_tag(copy)
    with (copy / "packages.txt").open("a") as fh:
        fh.write("htop\n")
    after = image_tag(copy)
    assert before != after
    printed = subprocess.run(
        [str(copy / "build-offline"), "--print-tag"], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert printed == after


def test_incomplete_definition_is_one_clear_error(tmp_path: Path) -> None:
    (tmp_path / DEFINITION_FILES[0]).write_text("FROM scratch\n")
    with pytest.raises(ToolError, match="incomplete"):
        image_tag(tmp_path)


@pytest.mark.parametrize(
    "name",
    ["OPENAI_API_KEY", "GITHUB_TOKEN", "AWS_SECRET_ACCESS_KEY", "PGPASSWORD", "SSH_AUTH_SOCK"],
)
def test_secret_looking_names(name: str) -> None:
    assert looks_secret(name)


def test_sandbox_env_is_an_allowlist_without_secrets() -> None:
    host = {"TZ": "UTC", "OPENAI_API_KEY": "sk-1", "EDITOR": "vim", "PATH": "/evil"}
    env = sandbox_env(["TZ", "OPENAI_API_KEY", "PATH"], host_env=host)
    assert env["TZ"] == "UTC"
    assert "OPENAI_API_KEY" not in env and "EDITOR" not in env
    assert env["PATH"] != "/evil" and env["HOME"] == "/home/sandbox"


def test_sandbox_user_writes_as_the_workspace_owner(tmp_path: Path) -> None:
    if os.getuid() != 0:
        assert sandbox_user(tmp_path) == (os.getuid(), os.getgid())
        assert not runs_as_root(sandbox_user(tmp_path))
        return
    assert sandbox_user(_owned(tmp_path, 4242)) == (4242, 4242)
    root_owned = tmp_path / "root-owned"
    root_owned.mkdir()
    # Root on a root-owned workspace writes as root; the sandboxes drop every privilege.
    assert sandbox_user(root_owned) == (0, 0) and runs_as_root(sandbox_user(root_owned))


def test_docker_gets_the_setuid_filter_only_when_commands_run_as_root(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert root_filter((4242, 4242)) is None
    assert not (support_files((4242, 4242)) / "setuid-filter.bpf").exists()
    program = setuid_filter("x86_64")
    assert program is not None and root_filter((0, 0), "x86_64") == program
    if setuid_filter() is not None:  # this machine has one: root's support files carry it
        assert (support_files((0, 0)) / "setuid-filter.bpf").read_bytes() == setuid_filter()
    with pytest.raises(
        ToolError, match=r"^the Docker sandbox cannot run commands as root on riscv64"
    ):
        root_filter((0, 0), "riscv64")


def test_the_runner_imports_only_the_files_mounted_beside_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The image may hold no clover-code, or another one: every module of clover-code
    # the runner imports must come from its own mounted folder.
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    folder = support_files((4242, 4242)) / "runner"
    probe = (
        f"import json, sys; sys.path.insert(0, {str(folder)!r}); import clover_runner; "
        "print(json.dumps({m: getattr(sys.modules[m], '__file__', None) "
        "for m in sys.modules if m.startswith('clover')}))"
    )
    done = subprocess.run(
        [sys.executable, "-I", "-c", probe], capture_output=True, text=True, check=True
    )
    modules = json.loads(done.stdout)
    assert "clover_code.tools.sandbox.runner_procs" in modules
    outside = {m: f for m, f in modules.items() if not str(f).startswith(str(folder) + "/")}
    assert outside == {}


def _owned(path: Path, uid: int) -> Path:
    os.chown(path, uid, uid)
    return path


def test_docker_chosen_but_not_answering_turns_the_shell_off(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DOCKER_HOST", NO_DOCKER)
    choice = choose_sandbox("docker", _workspace(tmp_path))
    assert choice.sandbox is None and choice.warning
    assert choice.notice is not None and "Docker is not answering" in choice.notice
    # asked for explicitly: headless stops on this one sentence (exit 3)
    assert choice.unavailable is not None
    assert choice.unavailable.startswith("--sandbox docker cannot run here: Docker is not")


def test_auto_without_docker_falls_back_to_bubblewrap_never_the_host(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DOCKER_HOST", NO_DOCKER)
    choice = choose_sandbox("auto", _workspace(tmp_path))
    if choice.sandbox is None:
        assert choice.notice is not None and "--sandbox none" in choice.notice
    else:
        assert choice.sandbox.kind == "bwrap"
        assert choice.notice is not None and "Docker" in choice.notice
        asyncio.run(choice.sandbox.close())


def test_auto_with_nothing_available_says_how_to_enable_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DOCKER_HOST", NO_DOCKER)
    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))
    choice = choose_sandbox("auto", _workspace(tmp_path))
    assert choice.sandbox is None and choice.warning
    assert choice.notice is not None
    assert "bubblewrap" in choice.notice and "--sandbox none" in choice.notice


def _workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    return _owned(root, 4242) if os.getuid() == 0 else root


def test_cli_usage_errors_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert sandbox_main(["explode"]) == 2
    assert "invalid choice" in capsys.readouterr().err
    assert sandbox_main(["build", "--offline", "--dockerfile"]) == 2


def test_cli_status_without_docker(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("DOCKER_HOST", NO_DOCKER)
    assert sandbox_main(["status"]) == 0
    out = capsys.readouterr().out
    assert "Docker" in out and "not answering" in out
    assert image_tag() in out


def test_cli_build_without_docker_is_one_sentence(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("DOCKER_HOST", NO_DOCKER)
    assert sandbox_main(["build"]) == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith("clover-code: Docker is not answering") and "\n" not in err
