"""The Docker image a project's commands run in: the project's own, or the built-in one.

``resolve_image`` picks and, when needed, builds it:

- the project's definition (``config/project_definition.py``: a devcontainer or
  ``.clover/sandbox/Dockerfile``) when the project is trusted
  (``project_image_trusted``); an untrusted one is not built (it runs
  programs) and the notice names the file and how to trust it;
- else clover-code's built-in image (``image.py``);
- then the setup commands (the devcontainer's lifecycle commands and the
  ``sandbox_setup`` setting) run once, as root with the network on and the
  workspace mounted at its path, in a container whose result is committed
  as the final image. Files they leave in the workspace are given back to
  the workspace's owner.

Images are tagged ``clover-code-project-<workspace name>:<digest>`` where the
digest covers the whole definition (``definition_digest``), so an image that
exists is used as is and a changed definition builds a new one. Builds may
use the network; the sandbox's own network rule applies to the commands run
in it afterwards.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from clover_code.config.project_definition import (
    ImageDefinition,
    definition_digest,
    definition_file,
    find_definition,
    setup_commands,
    trust_fingerprint,
)
from clover_code.config.trust import TrustReport, digest
from clover_code.errors import ToolError
from clover_code.tools.sandbox.policy import looks_secret, sandbox_user

__all__ = [
    "BASE_ARG",
    "PROJECT_IMAGE",
    "ProjectImage",
    "image_env",
    "image_trusted_by",
    "project_image_trusted",
    "project_tag",
    "resolve_image",
]

BASE_ARG = "CLOVER_BASE"
"""The build argument naming the built-in image: ``FROM ${CLOVER_BASE}``."""
PROJECT_IMAGE = "clover-code-project"
BUILT_LABEL = "org.clover-code.project"
"""Set on project images; its value is the definition file."""

_SETUP_ENV = {"PIP_BREAK_SYSTEM_PACKAGES": "1", "PIP_ROOT_USER_ACTION": "ignore"}
"""For setup commands only: the image is the project's own, so ``pip install`` may
install into its system Python (Debian marks it externally managed)."""

Progress = Callable[[str], None]
Trusted = Callable[[Path], bool]

_KEEP_OUT = frozenset(
    {"HOME", "USER", "LOGNAME", "SHELL", "TERM", "HOSTNAME", "PAGER", "GIT_PAGER"}
    | {"GIT_TERMINAL_PROMPT"}
)
"""Image variables the sandbox sets itself."""


def project_image_trusted(root: Path) -> bool:
    """Whether the image definition of the project at ``root`` may be built and used.

    The project's definition runs programs, so it follows the trust rule for
    project settings: untrusted until the user trusts it. This default trusts
    nothing; callers pass what the user said (``--trust-project``, the trust store).
    """
    del root
    return False


def image_trusted_by(report: TrustReport | None) -> Trusted:
    """Trust as the settings' loader judged it: the definition is used only while its
    fingerprint is the one the user trusted (a change after start makes it untrusted)."""

    def trusted(root: Path) -> bool:
        found = trust_fingerprint(root)
        return (
            report is not None and found is not None and report.trusts(found[0], digest(found[2]))
        )

    return trusted


@dataclass(frozen=True, slots=True)
class ProjectImage:
    """The image chosen for a workspace and what to tell the user about it."""

    tag: str
    definition: Path | None = None
    """The project's definition file in use; None for the built-in image."""
    notice: str | None = None
    """Set when the project's definition was passed over, and why."""


def resolve_image(
    client: Any,
    root: Path,
    *,
    setup: tuple[str, ...] = (),
    trusted: Trusted = project_image_trusted,
    progress: Progress | None = None,
    force: bool = False,
    builtin: str | None = None,
) -> ProjectImage:
    """The image for the workspace at ``root``, built if it is missing (or ``force``).

    ``builtin`` is the built-in image's tag when the caller has built it already.
    """
    # Docker's modules load only when Docker is the sandbox.
    from clover_code.tools.sandbox.docker_setup import short_error
    from clover_code.tools.sandbox.image import build_image, image_present

    say = progress or (lambda _line: None)
    builtin = builtin or build_image(client, progress=say)
    found = definition_file(root)
    notice = None
    definition = None
    if found is not None and not trusted(root):
        notice = (
            f"the project's sandbox image ({_shown(found, root)}) is not used: this project "
            "is not trusted and the file runs programs at build time. Commands use the "
            "built-in image; trust the project (--trust-project) to build and use its image."
        )
    elif found is not None:
        definition = find_definition(root)
    commands = setup_commands(definition, setup)
    if definition is None and not commands:
        return ProjectImage(builtin, None, notice)
    tag = project_tag(root, definition, commands, builtin)
    source = definition.source if definition is not None else None
    if not force and image_present(client, tag):
        say(f"{tag} is up to date")
        return ProjectImage(tag, source, notice)
    try:
        _build(client, root, definition, commands, builtin, tag, say)
    except _docker_errors() as exc:
        raise ToolError(f"the project's sandbox image build failed ({short_error(exc)}).") from None
    say(f"built {tag}")
    return ProjectImage(tag, source, notice)


def _docker_errors() -> tuple[type[BaseException], ...]:
    import docker.errors
    import requests

    return (docker.errors.DockerException, requests.RequestException)


def _build(
    client: Any,
    root: Path,
    definition: ImageDefinition | None,
    commands: tuple[str, ...],
    builtin: str,
    tag: str,
    say: Progress,
) -> None:
    finish_with_setup = bool(commands or (definition and definition.env))
    stage = f"{tag}-stage" if finish_with_setup else tag
    if definition is None:
        base = builtin
    elif definition.dockerfile is not None:
        _build_dockerfile(client, definition, builtin, stage, say)
        base = stage
    else:
        assert definition.image is not None
        base = _local_image(client, definition.image, say)
        if not finish_with_setup:
            client.api.tag(base, *tag.split(":", 1))
    if finish_with_setup:
        env = definition.env if definition is not None else {}
        _run_setup(client, root, base, commands, env, tag, say)
        if stage != tag and base == stage:
            with contextlib.suppress(Exception):
                client.api.remove_image(stage, noprune=True)
    _check_runnable(client, tag)


def _build_dockerfile(
    client: Any, definition: ImageDefinition, builtin: str, tag: str, say: Progress
) -> None:
    assert definition.dockerfile is not None
    context = definition.context or definition.dockerfile.parent
    if not context.is_dir():
        raise ToolError(f"the build context {context} named in {definition.source} is missing.")
    say(f"building {tag} from {definition.dockerfile}")
    stream = client.api.build(
        path=str(context),
        dockerfile=str(definition.dockerfile),
        tag=tag,
        buildargs={BASE_ARG: builtin, **definition.args},
        target=definition.target,
        rm=True,
        forcerm=True,
        decode=True,
        labels={BUILT_LABEL: str(definition.source)},
    )
    for event in stream:
        if "error" in event:
            msg = f"the project's sandbox image build failed: {str(event['error']).strip()}"
            raise ToolError(f"{msg} (in {definition.dockerfile}; see the lines above).")
        for line in str(event.get("stream", "")).splitlines():
            if line.strip():
                say(line.rstrip())


def _local_image(client: Any, image: str, say: Progress) -> str:
    """``image``, pulled first when this engine does not have it."""
    from clover_code.tools.sandbox.image import image_present

    if image_present(client, image):
        return image
    say(f"pulling {image}")
    repo, _, version = image.partition(":")
    for event in client.api.pull(repo, tag=version or "latest", stream=True, decode=True):
        if "error" in event:
            raise ToolError(f"cannot pull {image} ({event['error']}); check its name.")
        if event.get("status") and "progressDetail" not in event:
            say(f"{event.get('id', image)}: {event['status']}")
    return image


def _run_setup(
    client: Any,
    root: Path,
    base: str,
    commands: tuple[str, ...],
    env: dict[str, str],
    tag: str,
    say: Progress,
) -> None:
    """Run the setup commands in a container from ``base`` and commit it as ``tag``."""
    from docker.types import Mount

    from clover_code.tools.sandbox.docker_setup import LABEL

    uid, gid = sandbox_user(root)
    script = _setup_script(root, commands, (uid, gid))
    config = client.api.inspect_image(base).get("Config") or {}
    host_config = client.api.create_host_config(
        mounts=[Mount(str(root), str(root), type="bind")], network_mode="bridge"
    )
    container = client.api.create_container(
        image=base,
        entrypoint="",
        command=["/bin/sh", "-c", script],
        user="0:0",
        working_dir=str(root),
        environment={**_SETUP_ENV, **env},
        labels={f"{LABEL}.setup": str(root)},
        host_config=host_config,
    )["Id"]
    try:
        client.api.start(container)
        for chunk in client.api.logs(container, stream=True, follow=True):
            for line in chunk.decode("utf-8", "replace").splitlines():
                say(line.rstrip())
        code = int(client.api.wait(container).get("StatusCode", 1))
        if code != 0:
            raise ToolError(
                f"a sandbox setup command failed (exit code {code}; see the lines above); "
                "fix it in sandbox_setup or the devcontainer and build again."
            )
        # Keep the base image's own start command, not the one setup ran with.
        changes = [f"CMD {json.dumps(config.get('Cmd') or ['sleep', 'infinity'])}"]
        if config.get("Entrypoint"):
            changes.append(f"ENTRYPOINT {json.dumps(config['Entrypoint'])}")
        changes += [f"ENV {name}={json.dumps(value)}" for name, value in env.items()]
        changes.append(f"LABEL {BUILT_LABEL}={json.dumps(tag)}")
        repository, _, version = tag.partition(":")
        client.api.commit(container, repository=repository, tag=version, changes=changes)
    finally:
        with contextlib.suppress(Exception):
            client.api.remove_container(container, force=True)


def _setup_script(root: Path, commands: tuple[str, ...], owner: tuple[int, int]) -> str:
    """The shell script setup runs: each command, stopping at the first failure; then
    what it made in the workspace is given back to the workspace's owner."""
    stamp = "/tmp/.clover-setup-started"
    # Back-dated: a file made in the same clock tick would not be "newer" than it.
    lines = [f"touch -d @$(($(date +%s) - 2)) {stamp} 2>/dev/null || touch {stamp}", "set -e"]
    for command in commands:
        lines.append(f"echo {json.dumps('$ ' + command)}")
        lines.append(f"cd {json.dumps(str(root))}")
        lines.append(f"( {command}\n)")
    if owner[0] != 0:
        lines.append(
            f"find {json.dumps(str(root))} -xdev -user 0 -newer {stamp} "
            f"-exec chown -h {owner[0]}:{owner[1]} {{}} + 2>/dev/null || true"
        )
    lines.append(f"rm -f {stamp}")
    return "\n".join(lines) + "\n"


def _check_runnable(client: Any, tag: str) -> None:
    """The image has the ``python3`` the sandbox's command runner needs."""
    from clover_code.tools.sandbox.docker_setup import short_error

    try:
        output = client.containers.run(
            tag, ["python3", "-c", "print('ok')"], entrypoint="", remove=True, network_mode="none"
        )
    except _docker_errors() as exc:
        raise ToolError(
            f"the project's sandbox image {tag} cannot run python3, which clover-code's "
            f"command runner needs ({short_error(exc)}); start its Dockerfile "
            f"FROM ${{{BASE_ARG}}} or install python3 in it."
        ) from None
    if b"ok" not in output:
        raise ToolError(f"the project's sandbox image {tag} has no working python3; add one.")


def project_tag(
    root: Path, definition: ImageDefinition | None, commands: tuple[str, ...], builtin: str
) -> str:
    """``clover-code-project-<workspace name>:<digest of the whole definition>``."""
    digest = definition_digest(root, definition, commands, builtin)
    return f"{PROJECT_IMAGE}-{_repo_name(root)}:{digest}"


def image_env(client: Any, tag: str) -> dict[str, str]:
    """The variables the image sets (its PATH first of all), never one named like a credential."""
    config = client.api.inspect_image(tag).get("Config") or {}
    env: dict[str, str] = {}
    for item in config.get("Env") or []:
        name, sep, value = str(item).partition("=")
        if sep and name not in _KEEP_OUT and not looks_secret(name):
            env[name] = value
    return env


def _repo_name(root: Path) -> str:
    """The workspace's name as a Docker repository component."""
    name = re.sub(r"[^a-z0-9]+", "-", root.name.lower()).strip("-")
    return name[:64] or "workspace"


def _shown(path: Path, root: Path) -> str:
    try:
        return str(path.relative_to(root))
    except ValueError:
        return str(path)
