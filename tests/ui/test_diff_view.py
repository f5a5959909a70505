"""Diffs are highlighted for their file's language and stay cheap for huge lines."""

from __future__ import annotations

from rich.console import Console
from rich.style import Style
from rich.text import Text

from clover_code.ui.widgets.diff_view import LINE_LIMIT, render_diff

DIFF = """--- a/app.py
+++ b/app.py
@@ -1,2 +1,2 @@
 def add(a, b):
-    return a - b
+    return a + b
"""


def _style(text: Text, snippet: str) -> Style:
    return text.get_style_at_offset(Console(), text.plain.index(snippet))


def test_code_is_highlighted_and_changes_are_marked() -> None:
    text = render_diff(DIFF, 40)
    assert text.plain.splitlines() == [
        "--- a/app.py",
        "+++ b/app.py",
        "@@ -1,2 +1,2 @@",
        "   1  def add(a, b):",
        "   2 -    return a - b",
        "   2 +    return a + b",
    ]
    keyword = _style(text, "def")
    assert keyword.color is not None and keyword.color.name != "default", "no syntax colour"
    assert keyword.bgcolor is None or keyword.bgcolor.is_default
    removed = _style(text, "return a - b").bgcolor
    added = _style(text, "return a + b").bgcolor
    assert removed is not None and removed.name == "#3a1414"
    assert added is not None and added.name == "#12301a"


def test_a_five_megabyte_line_is_cut() -> None:
    huge = "--- a/x.min.js\n+++ b/x.min.js\n@@ -1 +1 @@\n-" + "a" * 5_000_000 + "\n+b\n"
    text = render_diff(huge, 40)
    assert len(text.plain) < LINE_LIMIT + 200


def test_line_numbers_follow_each_hunk() -> None:
    diff = "--- a/m.py\n+++ b/m.py\n@@ -10,3 +10,4 @@\n x\n-y\n+y1\n+y2\n z\n"
    numbers = [line.split()[0] for line in render_diff(diff, 40).plain.splitlines()[3:]]
    assert numbers == ["10", "11", "11", "12", "13"]
