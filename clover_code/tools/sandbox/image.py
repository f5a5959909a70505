"""The sandbox image: its versioned tag, and building it (Dockerfile or offline).

The definition lives in ``sandbox/`` at the top of the source tree: the
``Dockerfile``, ``build-offline`` (debootstrap + ``docker import``, for Docker
engines that cannot pull), ``packages.txt`` and ``setup.sh``. The tag is
``clover-code-sandbox:<version>`` where the version is the first 12 hex digits
of the SHA-256 of ``sha256sum``'s listing of those files, so any change to the
definition names a new image and an old one is rebuilt on next use.
``build-offline --print-tag`` computes the same tag in shell.
``clover_code/sandbox_image/`` only links to those files (one source); a wheel
carries copies of them, so it computes the same tag.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

from clover_code.errors import ToolError
from clover_code.tools.sandbox.docker_setup import short_error

__all__ = [
    "DEFINITION_FILES",
    "IMAGE_NAME",
    "BuildMethod",
    "base_image",
    "build_image",
    "image_present",
    "image_tag",
    "offline_problem",
    "sandbox_dir",
]

IMAGE_NAME = "clover-code-sandbox"
DEFINITION_FILES = ("Dockerfile", "build-offline", "packages.txt", "setup.sh")
"""The files whose contents make the image version (order matters)."""

BuildMethod = Literal["auto", "dockerfile", "offline"]
Progress = Callable[[str], None]


def sandbox_dir() -> Path:
    """The directory holding the image definition (``$CLOVER_SANDBOX_DIR`` overrides)."""
    override = os.environ.get("CLOVER_SANDBOX_DIR")
    if override:
        return Path(override)
    package = Path(__file__).resolve().parents[2]
    source_tree = package.parent / "sandbox"
    if (source_tree / "Dockerfile").is_file():
        return source_tree
    # An installed wheel carries the same files as package data.
    return package / "sandbox_image"


def _definition(directory: Path) -> Path:
    missing = [name for name in DEFINITION_FILES if not (directory / name).is_file()]
    if missing:
        msg = (
            f"the sandbox image definition is incomplete ({', '.join(missing)} missing in "
            f"{directory}); reinstall clover-code from its source tree or set CLOVER_SANDBOX_DIR."
        )
        raise ToolError(msg)
    return directory


def image_tag(directory: Path | None = None) -> str:
    """``clover-code-sandbox:<version>`` for the definition in ``directory``."""
    folder = _definition(directory or sandbox_dir())
    listing = "".join(
        f"{hashlib.sha256((folder / name).read_bytes()).hexdigest()}  {name}\n"
        for name in DEFINITION_FILES
    )
    return f"{IMAGE_NAME}:{hashlib.sha256(listing.encode()).hexdigest()[:12]}"


def base_image(directory: Path | None = None) -> str:
    """The image the Dockerfile starts FROM."""
    folder = _definition(directory or sandbox_dir())
    for line in (folder / "Dockerfile").read_text().splitlines():
        words = line.split()
        if len(words) >= 2 and words[0].upper() == "FROM":
            return words[1]
    raise ToolError(f"{folder / 'Dockerfile'} has no FROM line; restore it from the source tree.")


def image_present(client: Any, tag: str) -> bool:
    """Whether the Docker engine behind ``client`` has the image ``tag``."""
    import docker.errors

    try:
        client.images.get(tag)
    except docker.errors.ImageNotFound:
        return False
    return True


def offline_problem() -> str | None:
    """Why the offline build cannot run here (one phrase), or None when it can."""
    if not hasattr(os, "getuid") or os.getuid() != 0:
        return "the offline build needs root (debootstrap); run it with sudo"
    if shutil.which("debootstrap") is None:
        return "the offline build needs debootstrap (apt-get install debootstrap)"
    return None


def build_image(
    client: Any,
    *,
    method: BuildMethod = "auto",
    force: bool = False,
    progress: Progress | None = None,
    directory: Path | None = None,
) -> str:
    """Make sure the sandbox image exists, building it if needed; returns its tag.

    ``auto`` builds from the Dockerfile when its base image is present or can
    be pulled, else offline. Progress lines go to ``progress``. Raises
    ``ToolError`` with what to do when no build can succeed.
    """
    say = progress or (lambda _line: None)
    folder = _definition(directory or sandbox_dir())
    tag = image_tag(folder)
    if not force and image_present(client, tag):
        say(f"{tag} is up to date")
        return tag
    if method == "auto":
        method = _pick_method(client, folder, say)
    if method == "dockerfile":
        _build_dockerfile(client, folder, tag, say)
    else:
        _build_offline(folder, tag, say)
    say(f"built {tag}")
    return tag


def _pick_method(client: Any, folder: Path, say: Progress) -> BuildMethod:
    base = base_image(folder)
    if image_present(client, base):
        return "dockerfile"
    say(f"pulling {base}")
    try:
        _pull(client, base, say)
    except ToolError as exc:
        problem = offline_problem()
        if problem is not None:
            msg = f"{exc} And {problem}, or on a machine that can reach Docker Hub."
            raise ToolError(msg) from None
        say(f"{exc} Building offline with debootstrap instead.")
        return "offline"
    return "dockerfile"


def _pull(client: Any, image: str, say: Progress) -> None:
    import docker.errors
    import requests

    repo, _, tag = image.partition(":")
    try:
        for event in client.api.pull(repo, tag=tag or "latest", stream=True, decode=True):
            if "error" in event:
                raise ToolError(f"cannot pull {image} ({event['error']}).")
            if event.get("status") and "progressDetail" not in event:
                say(f"{event.get('id', image)}: {event['status']}")
    except (docker.errors.DockerException, requests.RequestException) as exc:
        raise ToolError(f"cannot pull {image} ({short_error(exc)}).") from None


def _build_dockerfile(client: Any, folder: Path, tag: str, say: Progress) -> None:
    import docker.errors
    import requests

    say(f"building {tag} from {folder / 'Dockerfile'}")
    labels = {"org.clover-code.sandbox.build": "dockerfile"}
    try:
        stream = client.api.build(
            path=str(folder), tag=tag, rm=True, forcerm=True, decode=True, labels=labels
        )
        for event in stream:
            if "error" in event:
                msg = f"the sandbox image build failed: {str(event['error']).strip()}"
                raise ToolError(msg + " (see the lines above).")
            for line in str(event.get("stream", "")).splitlines():
                if line.strip():
                    say(line.rstrip())
    except (docker.errors.DockerException, requests.RequestException) as exc:
        detail = short_error(exc)
        raise ToolError(
            f"the sandbox image build failed ({detail}); check `docker info`."
        ) from None


def _build_offline(folder: Path, tag: str, say: Progress) -> None:
    problem = offline_problem()
    if problem is not None:
        raise ToolError(f"cannot build the sandbox image offline: {problem}.")
    say(f"building {tag} offline with {folder / 'build-offline'}")
    proc = subprocess.Popen(
        [str(folder / "build-offline"), "--tag", tag],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        text=True,
        errors="replace",
    )
    assert proc.stdout is not None
    tail: list[str] = []
    for line in proc.stdout:
        say(line.rstrip())
        tail = [*tail[-9:], line.rstrip()]
    if proc.wait() != 0:
        last = tail[-1] if tail else "no output"
        raise ToolError(f"the offline sandbox image build failed ({last}); see the lines above.")
