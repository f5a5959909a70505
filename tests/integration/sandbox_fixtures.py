"""Fixtures for the sandbox tests: a real Docker engine and image, real bubblewrap.

The root ``tests/conftest.py`` loads this module as a plugin, so every test
can ask for these fixtures by name. When Docker, the
sandbox image or bubblewrap is missing the tests that need it skip, except
under CI (``CI`` set to a true value, see ``tests.waiting.in_ci``) where they
fail: CI must run them for real (``scripts/test`` installs Docker, starts it
and builds the image offline first).

``space`` is a fresh workspace plus an ``outside`` directory next to nothing
the sandbox mounts (under /var/tmp, which bubblewrap shows read-only and
Docker not at all). When the tests run as root both belong to an unprivileged
uid, the usual case of a workspace owned by a regular user; a root-owned
workspace (container CI) is what ``test_sandbox_root.py`` covers.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import tempfile
import threading
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from clover_code.errors import ToolError
from clover_code.tools.sandbox.base import Sandbox
from clover_code.tools.sandbox.bwrap import BwrapSandbox
from clover_code.tools.sandbox.bwrap_identity import bwrap_problem
from clover_code.tools.sandbox.docker import DockerSandbox
from clover_code.tools.sandbox.docker_setup import docker_client
from clover_code.tools.sandbox.image import image_present, image_tag
from clover_code.tools.sandbox.policy import SandboxLimits
from tests.waiting import PATIENCE, missing

TEST_UID = 4242
"""The owner of test workspaces when the tests run as root."""

LIMITS = SandboxLimits(memory_mb=512, pids=128, cpus=1.0, tmp_mb=256, home_mb=64)
"""Small limits, so fork bombs and memory hogs are cheap to contain."""

KINDS = [pytest.param("docker", marks=pytest.mark.docker), "bwrap"]
"""Parametrize a test over both sandboxes with ``@pytest.mark.parametrize("kind", KINDS)``."""


def _missing(what: str) -> None:
    missing(what, "CI must run the sandbox tests for real")


@dataclass
class Space:
    """A workspace, a directory outside it, and the uid:gid sandboxed commands use."""

    root: Path
    outside: Path
    uid: int
    gid: int


DOCKERD_LOCK = Path(tempfile.gettempdir()) / "clover-code-tests-dockerd.lock"
"""Shared by every running Docker test, taken alone by a test that stops the daemon.

Two test runs on one machine (two clones at once) share one Docker daemon: a
test in one run that stops it must not pull it away from the other's tests.
"""


def _flock(fd: int, mode: int, what: str) -> None:
    # A blocking flock (in a thread, for the deadline) is woken the moment the
    # last holder lets go; polling could keep missing the short gaps between
    # another run's Docker tests.
    taken = threading.Event()

    def take() -> None:
        with contextlib.suppress(OSError):  # the handle was closed after a timeout
            fcntl.flock(fd, mode)
            taken.set()

    threading.Thread(target=take, name="clover-test-dockerd-lock", daemon=True).start()
    if not taken.wait(2 * PATIENCE):
        raise AssertionError(f"waited {2 * PATIENCE:g} s for {what} ({DOCKERD_LOCK})")


@contextlib.contextmanager
def dockerd_lock(*, exclusive: bool) -> Iterator[None]:
    """Hold ``DOCKERD_LOCK``: shared while using Docker, exclusive while stopping it."""
    # Read-only: runs by other users can lock the file too (flock needs no write).
    fd = os.open(DOCKERD_LOCK, os.O_RDONLY | os.O_CREAT, 0o644)
    try:
        if exclusive:
            _flock(fd, fcntl.LOCK_EX, "other test runs' Docker tests to finish")
        else:
            _flock(fd, fcntl.LOCK_SH, "the Docker daemon to be back (another run stopped it)")
        yield
    finally:
        os.close(fd)  # releases the lock


@pytest.fixture(autouse=True)
def docker_in_use(request: pytest.FixtureRequest) -> Iterator[None]:
    """A test marked ``docker`` holds the shared ``DOCKERD_LOCK`` while it runs."""
    uses_docker = request.node.get_closest_marker("docker") is not None
    if not uses_docker or "dockerd_to_myself" in request.fixturenames:
        yield
        return
    with dockerd_lock(exclusive=False):
        yield


@pytest.fixture
def dockerd_to_myself() -> Iterator[None]:
    """For a test that stops the Docker daemon: no other run's Docker test runs meanwhile."""
    with dockerd_lock(exclusive=True):
        yield


@pytest.fixture(scope="session")
def docker_engine() -> Any:
    """A docker client whose daemon answered; skips (fails under CI) otherwise."""
    try:
        with dockerd_lock(exclusive=False):  # not while another run has it stopped
            return docker_client(timeout=10.0)
    except ToolError as exc:
        _missing(f"no Docker engine: {exc}")


@pytest.fixture(scope="session")
def sandbox_image(docker_engine: Any) -> str:
    """The current sandbox image tag; skips (fails under CI) when it is not built."""
    tag = image_tag()
    if not image_present(docker_engine, tag):
        _missing(f"the sandbox image {tag} is not built (run `clover-code sandbox build`)")
    return tag


@pytest.fixture(scope="session")
def bwrap_works() -> None:
    """Skips (fails under CI) when bubblewrap cannot sandbox on this machine."""
    problem = bwrap_problem()
    if problem is not None:
        _missing(problem)


@pytest.fixture
def space() -> Iterator[Space]:
    """A fresh workspace and outside directory, owned by the user commands run as."""
    uid, gid = (TEST_UID, TEST_UID) if os.getuid() == 0 else (os.getuid(), os.getgid())
    base = Path(tempfile.mkdtemp(prefix="clover-sbx-", dir="/tmp"))
    outside_base = Path(tempfile.mkdtemp(prefix="clover-outside-", dir="/var/tmp"))
    root, outside = base / "ws", outside_base / "outside"
    root.mkdir()
    outside.mkdir()
    (outside / "target.txt").write_text("original\n")
    if os.getuid() == 0:
        for path in (base, root, outside_base, outside, outside / "target.txt"):
            os.chown(path, uid, gid)
        base.chmod(0o755)
    try:
        yield Space(root, outside, uid, gid)
    finally:
        shutil.rmtree(base, ignore_errors=True)
        shutil.rmtree(outside_base, ignore_errors=True)


def open_sandbox(
    kind: str,
    root: Path,
    request: pytest.FixtureRequest,
    **options: Any,
) -> Sandbox:
    """A sandbox of ``kind`` on ``root`` with the test limits (``options`` override)."""
    options.setdefault("limits", LIMITS)
    if kind == "docker":
        image = request.getfixturevalue("sandbox_image")
        client = request.getfixturevalue("docker_engine")
        return DockerSandbox(root, image=image, client=client, **options)
    request.getfixturevalue("bwrap_works")
    return BwrapSandbox(root, **options)


@pytest.fixture
async def sandbox(
    kind: str, space: Space, request: pytest.FixtureRequest
) -> AsyncIterator[Sandbox]:
    """An open sandbox of the parametrized ``kind`` on ``space.root``; closed after."""
    box = open_sandbox(kind, space.root, request)
    try:
        yield box
    finally:
        await box.close()


async def assert_alive(box: Sandbox) -> None:
    """The sandbox still runs commands normally."""
    result = await box.exec("echo alive", timeout=30)
    assert (result.exit_code, result.output) == (0, "alive\n")
