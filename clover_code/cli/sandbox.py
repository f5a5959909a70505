"""``clover-code sandbox``: build the sandbox image, show what would run commands, or run one.

    clover-code sandbox build [--offline | --dockerfile] [--force] [--trust-project]
    clover-code sandbox status
    clover-code sandbox run [-C DIR] [--sandbox KIND] (-c LINE | -- PROGRAM ARG...)

``build`` without a method builds from the Dockerfile when the base image is
present or can be pulled, else offline (debootstrap, needs root). It does
nothing when the current image already exists, unless ``--force``. Then, in a
project with its own image definition (a devcontainer or
``.clover/sandbox/Dockerfile``) or ``sandbox_setup`` commands, it builds the
project's image on top (``project_image.py``); the definition runs programs,
so it is built only for a trusted project.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from clover_code.cli.sandbox_run import add_run_parser, run_main
from clover_code.errors import CloverError, ExitCode

if TYPE_CHECKING:
    from clover_code.config.settings import Settings

__all__ = ["build_parser", "main"]


def build_parser() -> argparse.ArgumentParser:
    """The sandbox command's subcommands: build, status, run."""
    parser = argparse.ArgumentParser(
        prog="clover-code sandbox",
        description="Build the Docker image shell commands run in, or show sandbox status.",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="{build,status,run}")
    build = sub.add_parser("build", help="build the sandbox image (if it is missing)")
    method = build.add_mutually_exclusive_group()
    method.add_argument(
        "--offline",
        action="store_const",
        dest="method",
        const="offline",
        help="build without any registry: debootstrap + docker import (needs root)",
    )
    method.add_argument(
        "--dockerfile",
        action="store_const",
        dest="method",
        const="dockerfile",
        help="build from sandbox/Dockerfile (pulls the Debian base image)",
    )
    build.add_argument("--force", action="store_true", help="rebuild even if the image exists")
    build.add_argument(
        "--trust-project",
        action="store_true",
        help="build this project's image definition (it runs the programs it names)",
    )
    build.set_defaults(method="auto")
    sub.add_parser("status", help="show Docker, bubblewrap and image status")
    add_run_parser(sub)
    return parser


def main(argv: list[str]) -> int:
    """Run ``clover-code sandbox ARGV``; returns the process exit code."""
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as exc:  # argparse has printed its usage message
        return int(exc.code) if isinstance(exc.code, int) else int(ExitCode.USAGE)
    try:
        if args.command == "build":
            return _build(args.method, args.force, args.trust_project)
        if args.command == "run":
            return run_main(args)
        return _status()
    except CloverError as exc:
        print(f"clover-code: {exc}", file=sys.stderr)
        return int(exc.exit_code)
    except KeyboardInterrupt:
        print("clover-code: interrupted.", file=sys.stderr)
        return int(ExitCode.INTERRUPTED)


def _build(method: Any, force: bool, trust_project: bool = False) -> int:
    from clover_code.tools.sandbox.docker_setup import docker_client
    from clover_code.tools.sandbox.image import build_image
    from clover_code.tools.sandbox.project_image import image_trusted_by, resolve_image

    started = time.monotonic()

    def progress(line: str) -> None:
        print(f"[{time.monotonic() - started:5.0f}s] {line}", flush=True)

    client = docker_client()
    tag = build_image(client, method=method, force=force, progress=progress)
    print(f"sandbox image ready: {tag} ({time.monotonic() - started:.0f}s)")
    root, settings = _project(trust_project)
    chosen = resolve_image(
        client,
        root,
        setup=tuple(settings.sandbox_setup),
        trusted=image_trusted_by(settings.project_trust),
        progress=progress,
        force=force,
        builtin=tag,
    )
    if chosen.notice:
        print(f"clover-code: {chosen.notice}", file=sys.stderr)
    if chosen.tag != tag:
        print(f"project sandbox image ready: {chosen.tag} ({time.monotonic() - started:.0f}s)")
    return 0


def _project(trust_project: bool = False) -> tuple[Path, Settings]:
    """The workspace here (its git top level) and its settings, the project's judged
    under trust (``--trust-project`` records that the user trusts them as they are)."""
    from clover_code.config.load import load_settings
    from clover_code.fs.workspace_root import find_root

    root, _ = find_root(Path.cwd())
    return root, load_settings(repo_root=root, trust_project=trust_project)


def _status() -> int:
    from clover_code.errors import ToolError
    from clover_code.tools.sandbox.bwrap_identity import bwrap_problem
    from clover_code.tools.sandbox.docker_setup import LABEL, docker_client
    from clover_code.tools.sandbox.image import image_tag
    from clover_code.tools.sandbox.policy import runs_as_root, sandbox_user

    tag = image_tag()
    rows: list[tuple[str, str]] = []
    client: Any = None
    try:
        client = docker_client(timeout=5.0)
        version = client.version().get("Version", "?")
        rows.append(("Docker", f"answering (engine {version})"))
    except ToolError as exc:
        rows.append(("Docker", f"not answering: {exc}"))
    if client is not None:
        rows.append(("image", _image_line(client, tag)))
        running = client.containers.list(all=True, filters={"label": LABEL})
        rows.append(("containers", f"{len(running)} sandbox container(s) on this engine"))
    else:
        rows.append(("image", f"{tag} (cannot check without Docker)"))
    rows.append(("project image", _project_line(client, tag)))
    as_root = runs_as_root(sandbox_user(Path.cwd()))
    problem = bwrap_problem(user=sandbox_user(Path.cwd()))
    rows.append(("bubblewrap", "works" if problem is None else problem))
    if as_root and problem is None:
        auto = "bwrap (root on a root-owned workspace: it runs commands as an unprivileged uid)"
    elif client is not None:
        auto = "docker"
    elif problem is None:
        auto = "bwrap"
    else:
        auto = "nothing: the shell tool would be off (start Docker or install bubblewrap)"
    rows.append(("--sandbox auto", auto))
    width = max(len(name) for name, _ in rows)
    for name, value in rows:
        print(f"{name.ljust(width)}  {value}")
    return 0


def _project_line(client: Any, builtin: str) -> str:
    """What the project here defines for the Docker sandbox, and whether it is built."""
    from clover_code.config.project_definition import find_definition, setup_commands
    from clover_code.errors import ToolError
    from clover_code.tools.sandbox.image import image_present
    from clover_code.tools.sandbox.project_image import project_tag

    root, settings = _project()
    setup = tuple(settings.sandbox_setup)
    try:
        definition = find_definition(root)
        commands = setup_commands(definition, setup)
        if definition is None and not commands:
            return "none: the built-in image is used"
        tag = project_tag(root, definition, commands, builtin)
    except ToolError as exc:
        return str(exc)
    what = str(definition.source) if definition is not None else "sandbox_setup"
    if client is None:
        return f"{what}: {tag} (cannot check without Docker)"
    state = "present" if image_present(client, tag) else "not built yet"
    return f"{what}: {tag} {state} (built for a trusted project: --trust-project)"


def _image_line(client: Any, tag: str) -> str:
    import docker.errors

    try:
        image = client.images.get(tag)
    except docker.errors.ImageNotFound:
        return f"{tag} missing: build it with `clover-code sandbox build`"
    how = image.labels.get("org.clover-code.sandbox.build", "?") if image.labels else "?"
    size = image.attrs.get("Size", 0) / 1e6
    created = str(image.attrs.get("Created", "?"))[:19].replace("T", " ")
    return f"{tag} present (built by {how}, {size:.0f} MB, {created})"
