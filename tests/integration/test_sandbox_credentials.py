"""Bubblewrap hides credentials by name, clover-code's own data, and keeps whole toolchains.

Real bubblewrap over a temporary HOME: each file of a table is read from
inside the sandbox, and the test checks which ones came through.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.sandbox_fixtures import Space, open_sandbox

pytestmark = pytest.mark.integration

HIDDEN = [
    "secret.txt",
    "password.txt",
    "passwords.txt",
    "my_token.txt",
    "mytoken.txt",
    "secret.md",
    "token.js",
    "token.py",
    "secret.sh",
    "token.cfg",
    "api_key.env",
    "password.yaml",
    "credentials.csv",
    "secrets.toml",
    "id_rsa",
    "mykey.pem",
    "src/proj/secret.txt",
    "src/proj/passwords.md",
    "src/proj/api_key.env",
    "src/proj/secrets.toml",
]
"""Home files that must not be readable in the sandbox (``src/proj`` is a git project)."""

VISIBLE = [
    "notes.txt",
    "tokenizer.txt",
    "keybindings.json",
    "monkey.txt",
    "src/proj/token.py",
    "src/proj/token.js",
    "src/proj/secret.sh",
    "src/proj/tokens.ts",
]
"""Home files that stay readable: ordinary names, and source files inside a project."""


@pytest.fixture
def home(space: Space) -> Iterator[Path]:
    """A user home outside the workspace (owned by the sandbox user by the test)."""
    base = Path(tempfile.mkdtemp(prefix="clover-home-", dir="/var/tmp"))
    base.chmod(0o755)
    try:
        yield base
    finally:
        shutil.rmtree(base, ignore_errors=True)


def _write(home: Path, names: list[str], space: Space) -> None:
    for name in names:
        path = home / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"CONTENT-OF-{name}\n")
    if os.getuid() == 0:
        subprocess.run(["chown", "-R", f"{space.uid}:{space.gid}", str(home)], check=True)


async def _readable(space: Space, request: pytest.FixtureRequest, names: list[str]) -> str:
    box = open_sandbox("bwrap", space.root, request)
    try:
        script = "; ".join(f"cat ~/{name} 2>/dev/null" for name in names)
        return (await box.exec(script, timeout=60)).output
    finally:
        await box.close()


async def test_credential_names_are_hidden_whatever_the_extension(
    space: Space, home: Path, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    (home / "src" / "proj" / ".git").mkdir(parents=True)
    _write(home, [*HIDDEN, *VISIBLE], space)
    monkeypatch.setenv("HOME", str(home))
    out = await _readable(space, request, [*HIDDEN, *VISIBLE])
    leaked = [name for name in HIDDEN if f"CONTENT-OF-{name}\n" in out]
    missing = [name for name in VISIBLE if f"CONTENT-OF-{name}\n" not in out]
    assert leaked == [], out
    assert missing == [], out


async def test_clover_codes_own_directories_are_hidden(
    space: Space, home: Path, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every transcript and checkpoint, under the home or where XDG_DATA_HOME says."""
    elsewhere = Path(tempfile.mkdtemp(prefix="clover-xdg-", dir="/var/tmp"))
    try:
        own = [
            ".local/share/clover-code/sessions/s1.jsonl",
            ".config/clover-code/config.toml",
            ".local/state/clover-code/log",
        ]
        _write(home, [*own, "notes.txt"], space)
        data = elsewhere / "data" / "clover-code" / "checkpoints" / "HEAD"
        data.parent.mkdir(parents=True)
        data.write_text("CONTENT-OF-xdg-data\n")
        elsewhere.chmod(0o755)
        monkeypatch.setenv("HOME", str(home))
        monkeypatch.setenv("XDG_DATA_HOME", str(elsewhere / "data"))
        box = open_sandbox("bwrap", space.root, request)
        try:
            script = "; ".join(f"cat ~/{name} 2>/dev/null" for name in [*own, "notes.txt"])
            out = (await box.exec(f"{script}; cat {data} 2>/dev/null", timeout=60)).output
        finally:
            await box.close()
    finally:
        shutil.rmtree(elsewhere, ignore_errors=True)
    assert "CONTENT-OF-notes.txt\n" in out, out
    for name in [*own, "xdg-data"]:
        assert f"CONTENT-OF-{name}\n" not in out, out


def _pyenv_shims() -> Path:
    """This machine's pyenv shims directory on PATH, when python is a pyenv install."""
    for entry in os.environ.get("PATH", "").split(os.pathsep):
        shims = Path(entry)
        if shims.name == "shims" and (shims.parent / "libexec" / "pyenv").is_file():
            return shims
    pytest.skip("python here is not a pyenv install")


async def test_pyenv_shims_work_with_another_home(
    tmp_path: Path, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A PATH entry brings its whole toolchain root: the shims need ``libexec/pyenv``."""
    shims = _pyenv_shims()
    if not os.access(shims / "python3", os.X_OK) or shims.stat().st_uid != os.getuid():
        pytest.skip("the pyenv install belongs to another user")
    root = tmp_path / "project"
    root.mkdir()
    other_home = tmp_path / "home"
    other_home.mkdir()
    monkeypatch.setenv("HOME", str(other_home))
    monkeypatch.setenv("PATH", f"{shims}:{shims.parent / 'bin'}:/usr/bin:/bin")
    monkeypatch.delenv("PYENV_ROOT", raising=False)
    box = open_sandbox("bwrap", root, request)
    try:
        result = await box.exec(
            "command -v python3; python3 -c 'print(\"pyenv-python-ok\")'", timeout=60
        )
    finally:
        await box.close()
    assert f"{shims}/python3\n" in result.output, result.output
    assert "pyenv-python-ok\n" in result.output, result.output


async def test_other_top_level_data_is_hidden_but_path_entries_stay(
    space: Space, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another user's project under a top-level directory (/srv, /work...) is hidden; a
    PATH entry there is bound back in."""
    if os.getuid() != 0:
        pytest.skip("making a top-level directory needs root")
    top = Path(tempfile.mkdtemp(prefix="clover-top-", dir="/"))
    try:
        top.chmod(0o755)
        other = top / "projects" / "other" / "app.py"
        other.parent.mkdir(parents=True)
        other.write_text("CONTENT-OF-other-project\n")
        other.chmod(0o644)
        tool = top / "tools" / "bin" / "top-tool"
        tool.parent.mkdir(parents=True)
        tool.write_text("#!/bin/sh\necho top-tool-ok\n")
        tool.chmod(0o755)
        for path in (top / "projects", other.parent, top / "tools", tool.parent):
            path.chmod(0o755)
        monkeypatch.setenv("PATH", f"{tool.parent}:{os.environ['PATH']}")
        box = open_sandbox("bwrap", space.root, request)
        try:
            out = (await box.exec(f"top-tool; cat {other} 2>/dev/null", timeout=60)).output
        finally:
            await box.close()
    finally:
        shutil.rmtree(top, ignore_errors=True)
    assert "top-tool-ok\n" in out, out
    assert "CONTENT-OF-other-project" not in out, out
