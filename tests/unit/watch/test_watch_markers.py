"""Finding and removing AI! / AI? comments in the comment syntax of each language."""

from __future__ import annotations

import pytest

from clover_code.watch import instruction_prompt
from clover_code.watch.markers import Marker, find_markers, openers_for, remove_marker


@pytest.mark.parametrize(
    ("name", "line", "text"),
    [
        ("a.py", "x = 1  # make it two AI!", "make it two"),
        ("a.ts", "let x = 1; // make it two AI!", "make it two"),
        ("a.c", "/* make it two AI! */", "make it two"),
        ("a.sql", "-- make it two ai!", "make it two"),
        ("a.lisp", ";; make it two AI!", "make it two"),
        ("a.html", "<!-- make it two AI! -->", "make it two"),
        ("a.tex", "% make it two AI!", "make it two"),
        ("a.vb", "' make it two AI!", "make it two"),
        ("notes", "# make it two AI!", "make it two"),
    ],
)
def test_markers_in_each_comment_syntax(name: str, line: str, text: str) -> None:
    [marker] = find_markers(line + "\n", name)
    assert (marker.kind, marker.text) == ("do", text)


def test_not_markers() -> None:
    assert find_markers('x = "AI!"\ny = 1  # said hai!\n# AI! is great\n', "a.py") == []
    assert find_markers("x = 1  // AI!\n", "a.py") == []  # not Python's comment syntax
    assert openers_for("Makefile") == ("#",)


def test_comment_openers_inside_strings_are_skipped() -> None:
    [marker] = find_markers('url = "http://x.org"  // use https AI!\n', "a.js")
    assert marker.inline and marker.text == "use https"
    assert remove_marker('url = "http://x.org"  // use https AI!\n', marker, "a.js") == (
        'url = "http://x.org"\n'
    )


def test_block_of_comment_lines_is_one_instruction_and_is_removed_whole() -> None:
    text = "import os\n# handle negatives\n# and explain why AI?\ndef f(x):\n    return x\n"
    [marker] = find_markers(text, "a.py")
    assert marker == Marker("ask", 2, 3, "handle negatives and explain why", inline=False)
    assert remove_marker(text, marker, "a.py") == "import os\ndef f(x):\n    return x\n"
    prompt = instruction_prompt("a.py", text, marker)
    assert "lines 2-3" in prompt and "     4\tdef f(x):" in prompt
    assert "Do not edit any file." in prompt


def test_inline_marker_keeps_code_and_crlf() -> None:
    text = "a = 1\r\nb = 2  # double it AI!\r\n"
    [marker] = find_markers(text, "a.py")
    assert remove_marker(text, marker, "a.py") == "a = 1\r\nb = 2\r\n"
