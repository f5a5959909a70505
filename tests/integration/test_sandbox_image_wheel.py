"""A wheel built from the tree carries the sandbox image definition and computes
the same image tag as the source tree (else `clover-code sandbox status` in a
wheel install looks for an image nobody built), and its version is the one
`clover_code.__version__` defines."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from email.parser import Parser
from pathlib import Path

import pytest

import clover_code
from clover_code.tools.sandbox.image import image_tag
from tests.waiting import missing

pytestmark = pytest.mark.integration

TREE = Path(__file__).resolve().parents[2]


def _copy_tracked(destination: Path) -> None:
    """The tracked files as they are now, links kept as links."""
    listed = subprocess.run(
        ["git", "ls-files", "-z"], cwd=TREE, capture_output=True, check=True
    ).stdout
    for name in filter(None, listed.decode().split("\0")):
        source, target = TREE / name, destination / name
        if not source.exists() and not source.is_symlink():
            continue  # deleted in the working tree
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, target, follow_symlinks=False)


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A wheel built by pip from a copy of the tracked files."""
    tmp_path = tmp_path_factory.mktemp("wheel")
    source = tmp_path / "src"
    _copy_tracked(source)
    dist = tmp_path / "dist"
    built = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(dist), str(source)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    if built.returncode != 0:
        missing(
            f"pip could not build a wheel here: {built.stderr.strip()[-300:]}",
            "CI has the build backend in its package index and must check the wheel",
        )
    [built_wheel] = dist.glob("clover_code-*.whl")
    return built_wheel


def test_a_wheel_and_the_tree_name_the_same_image(wheel: Path, tmp_path: Path) -> None:
    unpacked = tmp_path / "installed"
    with zipfile.ZipFile(wheel) as archive:
        archive.extractall(unpacked)
    packaged = unpacked / "clover_code" / "sandbox_image"
    assert not any(p.is_symlink() for p in packaged.iterdir())
    assert image_tag(packaged) == image_tag(TREE / "sandbox")


def test_the_wheel_has_the_version_the_package_defines(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as archive:
        [metadata] = [n for n in archive.namelist() if n.endswith(".dist-info/METADATA")]
        fields = Parser().parsestr(archive.read(metadata).decode())
    assert fields["Version"] == clover_code.__version__
    assert wheel.name.startswith(f"clover_code-{clover_code.__version__}-")
