"""Choose where shell commands run. Never a silent fall back to the host.

- ``docker``: Docker, building the image on first use; if that cannot work,
  the shell tool is off and the notice says why and what to do.
- ``bwrap``: bubblewrap, or the shell tool is off with the reason.
- ``auto``: Docker when a daemon answers and the image is (or can be) built;
  else bubblewrap when it works here; else no shell tool, and the notice says
  how to enable one.
- ``none``: the host, only because the user chose it, with a warning.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from clover_code.config import SandboxKind
from clover_code.errors import ToolError
from clover_code.tools.sandbox.base import Sandbox
from clover_code.tools.sandbox.policy import DEFAULT_PASSTHROUGH, SandboxLimits, sandbox_user

__all__ = ["SandboxChoice", "choose_sandbox"]

_ENABLE = (
    "Start Docker (clover-code builds its image on first use) or install bubblewrap "
    "(e.g. apt-get install bubblewrap), or pass --sandbox none to let the agent run "
    "commands directly on this machine."
)


@dataclass(slots=True)
class SandboxChoice:
    """The sandbox to use (None: no shell tool) and what to tell the user."""

    sandbox: Sandbox | None
    notice: str | None = None
    warning: bool = False


@dataclass(frozen=True, slots=True)
class _Options:
    network: bool
    limits: SandboxLimits
    passthrough: tuple[str, ...]
    output_limit: int
    progress: Callable[[str], None] | None
    image: str | None


def choose_sandbox(
    kind: SandboxKind,
    root: Path,
    *,
    network: bool = False,
    limits: SandboxLimits | None = None,
    passthrough: Iterable[str] = DEFAULT_PASSTHROUGH,
    output_limit: int = 30_000,
    progress: Callable[[str], None] | None = None,
    image: str | None = None,
) -> SandboxChoice:
    """Open the sandbox ``kind`` names for the workspace at ``root``.

    May build the Docker image (minutes, the first time): ``progress`` gets
    its lines. ``image`` overrides the image tag (then nothing is built).
    """
    if kind == "none":
        from clover_code.tools.sandbox.host import HostSandbox

        return SandboxChoice(
            HostSandbox(root, output_limit=output_limit),
            "shell commands run directly on this machine (--sandbox none): "
            "nothing isolates them from your files, network or credentials.",
            warning=True,
        )
    opts = _Options(
        network, limits or SandboxLimits(), tuple(passthrough), output_limit, progress, image
    )
    if kind == "docker":
        sandbox, problem = _docker(root, opts)
        if sandbox is None:
            return SandboxChoice(None, f"the shell tool is off: {problem}", warning=True)
        return SandboxChoice(sandbox, _describe(sandbox.kind, network))
    if kind == "bwrap":
        sandbox, problem = _bwrap(root, opts)
        if sandbox is None:
            return SandboxChoice(None, f"the shell tool is off: {problem}", warning=True)
        return SandboxChoice(sandbox, _describe(sandbox.kind, network))
    docker_sandbox, docker_problem = _docker(root, opts)
    if docker_sandbox is not None:
        return SandboxChoice(docker_sandbox, _describe("docker", network))
    bwrap_sandbox, bwrap_problem = _bwrap(root, opts)
    if bwrap_sandbox is not None:
        notice = f"{_describe('bwrap', network)} (Docker: {_unsentence(docker_problem)})"
        return SandboxChoice(bwrap_sandbox, notice)
    notice = (
        f"the shell tool is off: no sandbox is available (Docker: {_unsentence(docker_problem)}; "
        f"bubblewrap: {_unsentence(bwrap_problem)}). {_ENABLE}"
    )
    return SandboxChoice(None, notice, warning=True)


def _describe(kind: str, network: bool) -> str:
    where = {"docker": "a Docker container", "bwrap": "a bubblewrap sandbox"}[kind]
    net = "with network access" if network else "without network access"
    return f"shell commands run in {where}, {net}"


def _unsentence(text: str) -> str:
    return text.rstrip(".")


def _docker(root: Path, opts: _Options) -> tuple[Sandbox | None, str]:
    """A DockerSandbox, building the image if needed; or None and why not."""
    from clover_code.tools.sandbox.docker import DockerSandbox
    from clover_code.tools.sandbox.docker_setup import docker_client
    from clover_code.tools.sandbox.image import build_image

    try:
        client = docker_client(timeout=10.0)
        tag = opts.image or build_image(client, progress=opts.progress)
        sandbox = DockerSandbox(
            root,
            image=tag,
            network=opts.network,
            limits=opts.limits,
            passthrough=opts.passthrough,
            output_limit=opts.output_limit,
            client=client,
        )
    except ToolError as exc:
        return None, str(exc)
    return sandbox, ""


def _bwrap(root: Path, opts: _Options) -> tuple[Sandbox | None, str]:
    """A BwrapSandbox when bubblewrap works here; or None and why not."""
    from clover_code.tools.sandbox.bwrap import BwrapSandbox, bwrap_problem

    try:
        user = sandbox_user(root)
    except ToolError as exc:
        return None, str(exc)
    problem = bwrap_problem(user=user)
    if problem is not None:
        return None, f"{problem}; install bubblewrap or allow unprivileged user namespaces."
    try:
        sandbox = BwrapSandbox(
            root,
            network=opts.network,
            limits=opts.limits,
            passthrough=opts.passthrough,
            output_limit=opts.output_limit,
        )
    except ToolError as exc:
        return None, str(exc)
    return sandbox, ""
