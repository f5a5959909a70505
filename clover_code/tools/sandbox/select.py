"""Choose where shell commands run. Never a silent fall back to the host.

- ``docker``: Docker, building the image on first use; if that cannot work,
  the shell tool is off, the notice says why and what to do, and the choice
  is marked ``unavailable`` (headless mode then stops with exit code 3).
- ``bwrap``: bubblewrap, or the same as above.
- ``auto``: Docker when a daemon answers and the image is (or can be) built;
  else bubblewrap when it works here; else no shell tool, and the notice says
  how to enable one. When commands would write as host root (clover-code as
  root in a root-owned workspace, as in container CI) bubblewrap comes
  first: it runs them as an unprivileged uid, where Docker can only run them
  as uid 0 without capabilities. The notice says which was picked and why.
- ``none``: the host, only because the user chose it, with a warning.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from clover_code.config.settings import SandboxKind, Settings
from clover_code.errors import ToolError
from clover_code.tools.sandbox.base import Sandbox
from clover_code.tools.sandbox.policy import (
    DEFAULT_PASSTHROUGH,
    INNER_ID,
    SandboxLimits,
    runs_as_root,
    sandbox_user,
)
from clover_code.tools.sandbox.project_image import image_trusted_by, project_image_trusted

__all__ = ["GET_A_SANDBOX", "SandboxChoice", "choose_from_settings", "choose_sandbox"]

GET_A_SANDBOX = (
    "install bubblewrap (Debian/Ubuntu: `sudo apt-get install bubblewrap`, Fedora: "
    "`sudo dnf install bubblewrap`, Arch: `sudo pacman -S bubblewrap`) or Docker "
    "(macOS: `brew install --cask docker`, then open Docker Desktop)"
)
"""How to get a sandbox, one command per platform (a clause)."""


@dataclass(slots=True)
class SandboxChoice:
    """The sandbox to use (None: no shell tool) and what to tell the user."""

    sandbox: Sandbox | None
    notice: str | None = None
    warning: bool = False
    unavailable: str | None = None
    """Why the sandbox kind asked for explicitly (docker, bwrap) cannot run here,
    in one sentence; None otherwise."""


@dataclass(frozen=True, slots=True)
class _Options:
    network: bool
    limits: SandboxLimits
    passthrough: tuple[str, ...]
    output_limit: int
    progress: Callable[[str], None] | None
    image: str | None
    setup: tuple[str, ...] = ()
    trusted: Callable[[Path], bool] = project_image_trusted
    protect: tuple[str, ...] = ()
    notes: list[str] = field(default_factory=list)
    """What the Docker image choice has to say (a project image passed over, or in use)."""


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
    setup: Iterable[str] = (),
    project_trusted: Callable[[Path], bool] | bool = project_image_trusted,
    protect: Iterable[str] = (),
    forbidden: Collection[str] = (),
) -> SandboxChoice:
    """Open the sandbox ``kind`` names for the workspace at ``root``.

    May build the Docker image (minutes, the first time): ``progress`` gets
    its lines. ``image`` overrides the image tag (then nothing is built).
    Otherwise Docker uses the project's image when it has one and
    ``project_trusted`` says so, and runs the ``setup`` commands in it once
    (``project_image.py``). ``protect``: workspace scripts that trusted
    settings name, mounted read-only (``control_files``). ``forbidden``: kinds an
    administrator's managed settings forbid; ``auto`` never picks one, and one asked
    for explicitly is not opened (the settings refused it already; this holds anyway).
    """
    if kind in forbidden:
        why = f"--sandbox {kind} is forbidden by your administrator's managed settings"
        return SandboxChoice(None, f"the shell tool is off: {why}.", warning=True, unavailable=why)
    if kind == "none":
        from clover_code.tools.sandbox.host import HostSandbox

        return SandboxChoice(
            HostSandbox(root, output_limit=output_limit),
            "shell commands run directly on this machine (--sandbox none): "
            "nothing isolates them from your files, network or credentials.",
            warning=True,
        )
    trusted = project_trusted
    if isinstance(trusted, bool):
        trusted = (lambda _root: True) if trusted else (lambda _root: False)
    opts = _Options(
        network,
        limits or SandboxLimits(),
        tuple(passthrough),
        output_limit,
        progress,
        image,
        tuple(setup),
        trusted,
        tuple(protect),
    )
    as_root = _writes_as_root(root)
    if kind in ("docker", "bwrap"):
        sandbox, problem = (_docker if kind == "docker" else _bwrap)(root, opts)
        if sandbox is None:
            why = f"--sandbox {kind} cannot run here: {problem}"
            notice = f"the shell tool is off: {why}"
            return SandboxChoice(None, notice, warning=True, unavailable=why)
        return SandboxChoice(sandbox, _describe(sandbox.kind, network, as_root, opts.notes))
    order = ("bwrap", "docker") if as_root else ("docker", "bwrap")
    problems: dict[str, str] = {}
    for candidate in (c for c in order if c not in forbidden):
        sandbox, problem = (_docker if candidate == "docker" else _bwrap)(root, opts)
        if sandbox is not None:
            notice = _describe(candidate, network, as_root, opts.notes)
            if problems:
                ((other, why),) = problems.items()
                notice += f" ({_NAMES[other]}: {_unsentence(why)})"
            return SandboxChoice(sandbox, notice)
        problems[candidate] = problem
    host = ", or pass --sandbox none to run commands directly on this machine"
    if "none" in forbidden:
        host = ""
    # A kind forbidden by the administrator was not tried.
    found = {k: _unsentence(p) for k, p in problems.items()}
    why = "; ".join(
        f"{_NAMES[k]}: {found.get(k, 'forbidden by your administrator')}"
        for k in ("docker", "bwrap")
    )
    notice = f"no sandbox can run here, so the shell tool is off: {GET_A_SANDBOX}{host} ({why})."
    return SandboxChoice(None, notice, warning=True)


def choose_from_settings(
    settings: Settings, root: Path, progress: Callable[[str], None] | None = None
) -> SandboxChoice:
    """``choose_sandbox`` with the kind, network, limits and image ``settings`` name."""
    return choose_sandbox(
        settings.sandbox,
        root,
        network=settings.sandbox_network,
        limits=SandboxLimits(
            memory_mb=settings.sandbox_memory_mb,
            pids=settings.sandbox_pids,
            cpus=settings.sandbox_cpus,
        ),
        passthrough=settings.sandbox_env,
        output_limit=settings.output_limit,
        progress=progress,
        image=settings.sandbox_image,
        setup=settings.sandbox_setup,
        project_trusted=image_trusted_by(settings.project_trust),
        protect=settings.project_trust.trusted_scripts() if settings.project_trust else (),
        forbidden=settings.managed.forbidden_kinds(),
    )


_NAMES = {"docker": "Docker", "bwrap": "bubblewrap"}


def _writes_as_root(root: Path) -> bool:
    """Whether sandboxed commands would write as host root (see ``policy.runs_as_root``)."""
    try:
        return runs_as_root(sandbox_user(root))
    except OSError:
        return False


def _describe(
    kind: str, network: bool, as_root: bool = False, notes: list[str] | None = None
) -> str:
    text = _describe_kind(kind, network, as_root)
    if kind == "docker" and notes:
        text += "; " + "; ".join(notes)
    if kind == "bwrap":
        text += "; your PATH, virtualenv and home are readable there, credentials hidden"
    return text


def _describe_kind(kind: str, network: bool, as_root: bool) -> str:
    where = {"docker": "a Docker container", "bwrap": "a bubblewrap sandbox"}[kind]
    net = "with network access" if network else "without network access"
    if not as_root:
        return f"shell commands run in {where}, {net}"
    if kind == "bwrap":
        who = (
            f"as the unprivileged uid {INNER_ID} (root outside, for writing this root-owned "
            "workspace) with no capabilities"
        )
    else:
        who = "as uid 0 with no capabilities, no new privileges and a read-only root"
    return f"shell commands run in {where} {who}, {net}"


def _shown(path: Path, root: Path) -> str:
    return str(path.relative_to(root)) if path.is_relative_to(root) else str(path)


def _unsentence(text: str) -> str:
    return text.rstrip(".")


def _docker(root: Path, opts: _Options) -> tuple[Sandbox | None, str]:
    """A DockerSandbox, building the image if needed; or None and why not."""
    from clover_code.tools.sandbox.docker import DockerSandbox
    from clover_code.tools.sandbox.docker_setup import docker_client
    from clover_code.tools.sandbox.project_image import resolve_image

    try:
        client = docker_client(timeout=10.0)
        tag = opts.image
        if tag is None:
            chosen = resolve_image(
                client, root, setup=opts.setup, trusted=opts.trusted, progress=opts.progress
            )
            tag = chosen.tag
            if chosen.definition is not None:
                opts.notes.append(f"image {tag}, from {_shown(chosen.definition, root)}")
            elif opts.setup:
                opts.notes.append(f"image {tag}, the built-in one with sandbox_setup run")
            if chosen.notice:
                opts.notes.append(chosen.notice)
        sandbox = DockerSandbox(
            root,
            image=tag,
            network=opts.network,
            limits=opts.limits,
            passthrough=opts.passthrough,
            output_limit=opts.output_limit,
            client=client,
            protect=opts.protect,
        )
    except ToolError as exc:
        return None, str(exc)
    return sandbox, ""


def _bwrap(root: Path, opts: _Options) -> tuple[Sandbox | None, str]:
    """A BwrapSandbox when bubblewrap works here; or None and why not."""
    from clover_code.tools.sandbox.bwrap import BwrapSandbox
    from clover_code.tools.sandbox.bwrap_identity import bwrap_problem

    problem = bwrap_problem(user=sandbox_user(root))
    if problem is not None:
        return None, f"{problem}; install bubblewrap or allow unprivileged user namespaces."
    try:
        sandbox = BwrapSandbox(
            root,
            network=opts.network,
            limits=opts.limits,
            passthrough=opts.passthrough,
            output_limit=opts.output_limit,
            protect=opts.protect,
        )
    except ToolError as exc:
        return None, str(exc)
    return sandbox, ""
