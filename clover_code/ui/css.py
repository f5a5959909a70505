"""Each widget keeps its styles in a ``.tcss`` file next to its module."""

from __future__ import annotations

from pathlib import Path


def sibling_css(module_file: str) -> str:
    """The text of the ``.tcss`` file beside ``module_file`` (``foo.py`` -> ``foo.tcss``)."""
    return Path(module_file).with_suffix(".tcss").read_text(encoding="utf-8")
