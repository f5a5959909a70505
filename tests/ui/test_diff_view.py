"""Diffs are highlighted for their file's language in the theme's colours and stay cheap
for huge lines."""

from __future__ import annotations

from clover_code.ui.widgets.diff_view import LINE_LIMIT, render_diff

DIFF = """--- a/app.py
+++ b/app.py
@@ -1,2 +1,2 @@
 def add(a, b):
-    return a - b
+    return a + b
"""


def _styles(content: object, snippet: str) -> list[str]:
    """The styles of the spans that cover the start of ``snippet``."""
    plain: str = content.plain  # type: ignore[attr-defined]
    at = plain.index(snippet)
    spans = content.spans  # type: ignore[attr-defined]
    return [str(span.style) for span in spans if span.start <= at < span.end]


def test_code_is_highlighted_and_changes_are_marked_in_theme_colours() -> None:
    content = render_diff(DIFF, 40)
    assert content.plain.splitlines() == [
        "--- a/app.py",
        "+++ b/app.py",
        "@@ -1,2 +1,2 @@",
        "   1  def add(a, b):",
        "   2 -    return a - b",
        "   2 +    return a + b",
    ]
    assert "bold $text-primary" in _styles(content, "def")  # a keyword, in the theme's colour
    assert "on $error-muted" in _styles(content, "return a - b")
    assert "on $success-muted" in _styles(content, "return a + b")
    every = {str(span.style) for span in content.spans}
    assert not any("#" in style for style in every), f"a fixed colour: {every}"


def test_a_five_megabyte_line_is_cut() -> None:
    huge = "--- a/x.min.js\n+++ b/x.min.js\n@@ -1 +1 @@\n-" + "a" * 5_000_000 + "\n+b\n"
    content = render_diff(huge, 40)
    assert len(content.plain) < LINE_LIMIT + 200


def test_line_numbers_follow_each_hunk() -> None:
    diff = "--- a/m.py\n+++ b/m.py\n@@ -10,3 +10,4 @@\n x\n-y\n+y1\n+y2\n z\n"
    numbers = [line.split()[0] for line in render_diff(diff, 40).plain.splitlines()[3:]]
    assert numbers == ["10", "11", "11", "12", "13"]
