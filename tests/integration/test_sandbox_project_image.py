"""The Docker sandbox runs in the project's own image when the project is trusted.

Real Docker, real builds. No registry is reachable from the test machines, so
every project Dockerfile here starts ``FROM ${CLOVER_BASE}`` (the built-in
image, built offline) and installs its tool without the network.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from clover_code.config.load import load_settings
from clover_code.config.settings import Settings
from clover_code.config.trust import TrustStore
from clover_code.tools.base import ToolContext
from clover_code.tools.sandbox.docker import DockerSandbox
from clover_code.tools.sandbox.select import SandboxChoice, choose_from_settings, choose_sandbox
from clover_code.tools.shell import ShellArgs, ShellTool
from clover_code.tools.workspace import Workspace
from tests.integration.sandbox_fixtures import TEST_UID

pytestmark = [pytest.mark.integration, pytest.mark.docker]

DEVCONTAINER = """// The project's development container (comments and trailing commas allowed).
{
  "name": "probe",
  "build": {
    "dockerfile": "Dockerfile",
    "context": "..",
    "args": {"TOOL_WORD": "project-tool-ok"},
  },
  /* run once, when the image is built */
  "postCreateCommand": {"marker": "echo post-create-ran > /opt/post-create"},
}
"""

DOCKERFILE = """ARG CLOVER_BASE
FROM ${CLOVER_BASE}
ARG TOOL_WORD
COPY tools/helper /usr/local/bin/helper
RUN printf '#!/bin/sh\\necho %s\\n' "$TOOL_WORD" > /usr/local/bin/projtool \\
 && chmod +x /usr/local/bin/projtool
"""


@pytest.fixture
def project(sandbox_image: str, docker_engine: Any) -> Iterator[Path]:
    """A fresh workspace (uniquely named, so its images are its own); its images go after."""
    base = Path(tempfile.mkdtemp(prefix="clover-proj-", dir="/tmp"))
    root = base / f"probe-{uuid.uuid4().hex[:8]}"
    root.mkdir()
    try:
        yield root
    finally:
        if os.getuid() == 0:
            subprocess.run(["chown", "-R", "0:0", str(base)], check=False)
        shutil.rmtree(base, ignore_errors=True)
        # Only this project's tags: an image may also carry the built-in tag
        # (a devcontainer naming it), which must stay.
        mine = f"clover-code-project-{root.name}:"
        for image in docker_engine.images.list(name=mine.rstrip(":")):
            for tag in image.tags:
                if tag.startswith(mine):
                    with contextlib.suppress(Exception):
                        docker_engine.images.remove(tag, noprune=False)


def _devcontainer_project(root: Path) -> None:
    (root / ".devcontainer").mkdir()
    (root / ".devcontainer" / "devcontainer.json").write_text(DEVCONTAINER)
    (root / ".devcontainer" / "Dockerfile").write_text(DOCKERFILE)
    (root / "tools").mkdir()
    helper = root / "tools" / "helper"
    helper.write_text("#!/bin/sh\necho helper-from-context\n")
    helper.chmod(0o755)
    _own(root)


def _own(root: Path) -> None:
    """As root, give the workspace to an unprivileged user, as on a developer's machine."""
    if os.getuid() == 0:
        subprocess.run(["chown", "-R", f"{TEST_UID}:{TEST_UID}", str(root)], check=True)


def _choose(root: Path, lines: list[str] | None = None, **options: Any) -> SandboxChoice:
    sink = lines if lines is not None else []
    return choose_sandbox("docker", root, progress=sink.append, **options)


async def _run(choice: SandboxChoice, command: str) -> str:
    assert choice.sandbox is not None, choice.notice
    try:
        result = await choice.sandbox.exec(command, timeout=60)
    finally:
        await choice.sandbox.close()
    return result.output


async def test_devcontainer_image_with_its_tool_runs_the_shell_calls(
    project: Path, sandbox_image: str
) -> None:
    _devcontainer_project(project)
    choice = _choose(project, project_trusted=True)
    assert choice.notice is not None and ".devcontainer/devcontainer.json" in choice.notice
    assert isinstance(choice.sandbox, DockerSandbox)
    assert choice.sandbox.image.startswith(f"clover-code-project-{project.name}:")
    ctx = ToolContext(workspace=Workspace(project), sandbox=choice.sandbox)
    command = "projtool; helper; cat /opt/post-create; id -u; ls /sys/class/net"
    try:
        result = await ShellTool().run(ShellArgs(command=command), ctx)
    finally:
        await choice.sandbox.close()
    assert result.display.exit_code == 0, result.text
    output = result.text.rpartition("exit code")[0]
    assert output.split() == [
        "project-tool-ok",
        "helper-from-context",
        "post-create-ran",
        str(TEST_UID if os.getuid() == 0 else os.getuid()),
        "lo",  # the session keeps the sandbox's rule: no network
    ], output


async def test_untrusted_project_gets_the_built_in_image_and_a_notice(
    project: Path, sandbox_image: str
) -> None:
    _devcontainer_project(project)
    lines: list[str] = []
    choice = _choose(project, lines)
    assert isinstance(choice.sandbox, DockerSandbox)
    assert choice.sandbox.image == sandbox_image
    assert choice.notice is not None
    assert ".devcontainer/devcontainer.json) is not used" in choice.notice, choice.notice
    assert "--trust-project" in choice.notice
    assert not any("Step" in line or "building" in line for line in lines), lines
    output = await _run(choice, "command -v projtool || echo no-projtool")
    assert output == "no-projtool\n"


async def test_the_project_image_is_cached(
    project: Path, sandbox_image: str, docker_engine: Any
) -> None:
    _devcontainer_project(project)
    first = _choose(project, project_trusted=True)
    assert isinstance(first.sandbox, DockerSandbox)
    tag = first.sandbox.image
    image_id = docker_engine.images.get(tag).id
    lines: list[str] = []
    second = _choose(project, lines, project_trusted=True)
    assert isinstance(second.sandbox, DockerSandbox)
    assert second.sandbox.image == tag and docker_engine.images.get(tag).id == image_id
    assert f"{tag} is up to date" in lines, lines
    assert not any("Step" in line or "building" in line for line in lines), lines
    # A changed definition is a new image.
    dockerfile = project / ".devcontainer" / "Dockerfile"
    dockerfile.write_text(dockerfile.read_text() + "RUN true\n")
    third = _choose(project, project_trusted=True)
    assert isinstance(third.sandbox, DockerSandbox) and third.sandbox.image != tag
    for choice in (first, second, third):
        assert choice.sandbox is not None
        await choice.sandbox.close()


async def test_sandbox_setup_runs_once_per_image_with_the_network_on(
    project: Path, sandbox_image: str
) -> None:
    # The .clover/sandbox/Dockerfile form, plus sandbox_setup commands.
    (project / ".clover" / "sandbox").mkdir(parents=True)
    (project / ".clover" / "sandbox" / "Dockerfile").write_text(
        "ARG CLOVER_BASE\nFROM ${CLOVER_BASE}\nRUN echo from-dockerfile > /opt/from-dockerfile\n"
    )
    _own(project)
    setup = [
        "echo setup-ran >> setup-runs.txt",  # in the workspace: counts the runs
        "ls /sys/class/net > /opt/setup-net",
        "printf '#!/bin/sh\\necho setup-tool-ok\\n' > /usr/local/bin/setuptool",
        "chmod +x /usr/local/bin/setuptool",
    ]
    lines: list[str] = []
    first = _choose(project, lines, setup=setup, project_trusted=True)
    assert any(line == "$ echo setup-ran >> setup-runs.txt" for line in lines), lines
    output = await _run(first, "setuptool; cat /opt/from-dockerfile /opt/setup-net; echo --")
    words = output.split()
    assert words[:2] == ["setup-tool-ok", "from-dockerfile"], output
    assert "lo" in words and len(set(words[2 : words.index("--")])) >= 2, output  # had a network
    second = _choose(project, setup=setup, project_trusted=True)
    await _run(second, "true")
    runs = project / "setup-runs.txt"
    assert runs.read_text() == "setup-ran\n"
    expected_owner = TEST_UID if os.getuid() == 0 else os.getuid()
    assert runs.stat().st_uid == expected_owner  # given back to the workspace's owner


async def test_setup_on_the_built_in_image_without_a_project_definition(
    project: Path, sandbox_image: str
) -> None:
    _own(project)
    choice = _choose(project, setup=["echo plain-setup > /opt/plain"])
    assert isinstance(choice.sandbox, DockerSandbox)
    assert choice.sandbox.image != sandbox_image
    assert "sandbox_setup" in (choice.notice or "")
    assert await _run(choice, "cat /opt/plain") == "plain-setup\n"


async def test_setup_can_pip_install_the_project_into_the_image(
    project: Path, sandbox_image: str
) -> None:
    """The README's ``pip install -e`` (offline here: no build isolation, no dependencies)."""
    (project / "pyproject.toml").write_text(
        '[build-system]\nrequires = ["setuptools"]\nbuild-backend = "setuptools.build_meta"\n'
        '[project]\nname = "probe-pkg"\nversion = "0.1"\n'
    )
    (project / "probe_pkg").mkdir()
    (project / "probe_pkg" / "__init__.py").write_text("WHERE = 'editable-install-ok'\n")
    _own(project)
    setup = ["pip install --no-build-isolation --no-deps -e ."]
    choice = _choose(project, setup=setup)
    output = await _run(
        choice, "(cd /tmp && python3 -c 'import probe_pkg; print(probe_pkg.WHERE)')"
    )
    assert output == "editable-install-ok\n", output
    expected_owner = TEST_UID if os.getuid() == 0 else os.getuid()
    made = [p for p in project.rglob("*") if p.stat().st_uid != expected_owner]
    assert made == [], made  # what setup left in the workspace is the owner's


async def test_setup_from_an_untrusted_project_config_does_not_run(
    project: Path, sandbox_image: str, tmp_path: Path
) -> None:
    (project / ".clover").mkdir()
    (project / ".clover" / "config.toml").write_text(
        'sandbox = "docker"\nsandbox_setup = ["echo ran > setup-ran.txt"]\n'
    )
    _own(project)
    store = TrustStore(tmp_path / "trust.json")
    settings = load_settings(
        repo_root=project, user_config=tmp_path / "none.toml", env={}, store=store
    )
    # The loader drops commands an untrusted project file would run, and says so once.
    assert settings.sandbox_setup == []
    assert settings.project_trust is not None
    assert "sandbox_setup" in (settings.project_trust.notice() or "")
    choice = choose_from_settings(settings, project)
    assert isinstance(choice.sandbox, DockerSandbox) and choice.sandbox.image == sandbox_image
    await choice.sandbox.close()
    assert not (project / "setup-ran.txt").exists()


async def test_the_trust_store_decides_the_devcontainer_and_a_change_untrusts_it(
    project: Path, sandbox_image: str, tmp_path: Path
) -> None:
    _devcontainer_project(project)
    store = TrustStore(tmp_path / "trust.json")

    def settings(trust_project: bool = False) -> Settings:
        return load_settings(
            {"sandbox": "docker"},
            repo_root=project,
            user_config=tmp_path / "none.toml",
            env={},
            store=store,
            trust_project=trust_project,
        )

    untrusted = settings()
    assert untrusted.project_trust is not None
    assert ".devcontainer/devcontainer.json" in (untrusted.project_trust.notice() or "")
    # --trust-project records the definition as it is: the project image is built and used.
    trusted = choose_from_settings(settings(trust_project=True), project)
    assert isinstance(trusted.sandbox, DockerSandbox), trusted.notice
    assert trusted.sandbox.image.startswith(f"clover-code-project-{project.name}:")
    assert "project-tool-ok" in await _run(trusted, "projtool")
    # Later runs believe the record, without the flag.
    again = choose_from_settings(settings(), project)
    assert isinstance(again.sandbox, DockerSandbox) and again.sandbox.image == trusted.sandbox.image
    await again.sandbox.close()
    # A changed Dockerfile is new content: untrusted again, the built-in image is used.
    dockerfile = project / ".devcontainer" / "Dockerfile"
    dockerfile.write_text(dockerfile.read_text() + "RUN touch /changed\n")
    changed = choose_from_settings(settings(), project)
    assert isinstance(changed.sandbox, DockerSandbox) and changed.sandbox.image == sandbox_image
    assert "--trust-project" in (changed.notice or "")
    await changed.sandbox.close()


async def test_devcontainer_naming_a_local_image(
    project: Path, sandbox_image: str, docker_engine: Any
) -> None:
    (project / ".devcontainer.json").write_text(
        json.dumps({"image": sandbox_image, "containerEnv": {"PROJECT_MODE": "from-env"}})
    )
    _own(project)
    choice = _choose(project, project_trusted=True)
    assert isinstance(choice.sandbox, DockerSandbox) and choice.sandbox.image != sandbox_image
    assert await _run(choice, "echo $PROJECT_MODE") == "from-env\n"
    plain = project / ".devcontainer.json"
    plain.write_text(json.dumps({"image": sandbox_image}))
    choice = _choose(project, project_trusted=True)
    assert isinstance(choice.sandbox, DockerSandbox)
    same = (
        docker_engine.images.get(choice.sandbox.image).id
        == docker_engine.images.get(sandbox_image).id
    )
    assert same and choice.sandbox.image.startswith("clover-code-project-")
    await choice.sandbox.close()


def test_a_broken_devcontainer_is_one_clear_sentence(project: Path, sandbox_image: str) -> None:
    (project / ".devcontainer").mkdir()
    (project / ".devcontainer" / "devcontainer.json").write_text(json.dumps({"name": "x"}))
    choice = _choose(project, project_trusted=True)
    assert choice.sandbox is None and choice.unavailable is not None
    assert "names neither an image nor build.dockerfile" in choice.unavailable


def _cli(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    repo = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": str(repo)}
    return subprocess.run(
        [sys.executable, "-m", "clover_code", "sandbox", *args],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


def test_sandbox_build_builds_the_trusted_projects_image_with_progress(
    project: Path, sandbox_image: str, docker_engine: Any
) -> None:
    _devcontainer_project(project)
    untrusted = _cli(project, "build")
    assert untrusted.returncode == 0, untrusted.stderr
    assert "--trust-project" in untrusted.stderr and "Step" not in untrusted.stdout
    built = _cli(project, "build", "--trust-project")
    assert built.returncode == 0, built.stderr
    assert re.search(r"^\[\s*\d+s\] Step \d+/\d+ : FROM \$\{CLOVER_BASE\}$", built.stdout, re.M)
    tag = re.search(r"^project sandbox image ready: (\S+) ", built.stdout, re.M)
    assert tag is not None, built.stdout
    assert tag.group(1).startswith(f"clover-code-project-{project.name}:")
    docker_engine.images.get(tag.group(1))
    status = _cli(project, "status")
    assert f"{tag.group(1)} present" in status.stdout, status.stdout
