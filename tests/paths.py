"""Where things are in the repository, for tests in any folder."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
"""The repository's root."""
UNIT_FIXTURES = ROOT / "tests" / "unit" / "fixtures"
"""Data files of the unit tests."""
GITHUB_EVENTS = ROOT / "tests" / "integration" / "github_events"
"""Recorded GitHub webhook payloads."""
