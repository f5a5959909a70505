from __future__ import annotations

import os
from pathlib import Path

import pytest

# The sandbox fixtures (docker_engine, sandbox_image, bwrap_works, space, sandbox).
pytest_plugins = ["tests.integration.sandbox_fixtures"]


@pytest.fixture(autouse=True)
def isolated_user_dirs(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> Path:
    """Keep every test away from the real user config, data and CLOVER_* variables."""
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / "config"))
    monkeypatch.setenv("XDG_DATA_HOME", str(home / "data"))
    for key in list(os.environ):
        if key.startswith("CLOVER_"):
            monkeypatch.delenv(key)
    return home
