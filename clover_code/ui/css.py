"""Each widget keeps its styles in a ``.tcss`` file next to its module; ``MUTED`` is the
content style of secondary text."""

from __future__ import annotations

from pathlib import Path


def sibling_css(module_file: str) -> str:
    """The text of the ``.tcss`` file beside ``module_file`` (``foo.py`` -> ``foo.tcss``)."""
    return Path(module_file).with_suffix(".tcss").read_text(encoding="utf-8")


MUTED = "$foreground 80%"
"""Secondary text (a line number, a footnote): dimmer than the text, yet at least 3:1
against the background in every built-in theme (``$text-muted`` is not dimmed in
content styles, and ``dim`` falls to about 2.6:1 in the solarized themes)."""
