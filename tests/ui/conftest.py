"""UI test fixtures: frozen clocks and cursor, a small git repo, isolated settings."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from clover_code.config.settings import Settings
from clover_code.ui.clock import Clock
from clover_code.ui.widgets.prompt_input import PromptInput
from tests.ui.fakes_ui import make_repo, ui_settings


@pytest.fixture(autouse=True)
def frozen_ui(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """No cursor blink, a stopped clock: spinners and rates draw the same every run."""
    monkeypatch.setattr(Clock, "frozen", 1000.0)
    monkeypatch.setattr(PromptInput, "BLINK", False)
    monkeypatch.setenv("TEXTUAL_ANIMATIONS", "none")
    yield


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A git repo with ``calc.py`` committed."""
    return make_repo(tmp_path / "repo")


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    """Settings for the app under test."""
    return ui_settings(tmp_path)
