"""The lines a diff adds: their rows and their numbers in the new file, hunk by hunk."""

from __future__ import annotations

from clover_code.protocol.diff_rows import AddedRow, added_rows
from clover_code.tools.fileio import unified_diff


def test_added_lines_are_numbered_in_the_new_file() -> None:
    diff = "--- a/f\n+++ b/f\n@@ -3,3 +3,4 @@\n a\n-b\n+B\n+++c\n d\n"
    # "+++c" adds the line "++c": inside a hunk it is not a file header.
    assert added_rows(diff) == [AddedRow(5, 4, "B", "f"), AddedRow(6, 5, "++c", "f")]


def test_a_patch_of_two_files_numbers_each_from_its_hunks() -> None:
    diff = unified_diff("x\n", "x\ny\n", "one.py") + unified_diff(None, "z\n", "two.py")
    rows = diff.split("\n")
    found = added_rows(diff)
    assert [(rows[a.row], a.number, a.text, a.path) for a in found] == [
        ("+y", 2, "y", "one.py"),
        ("+z", 1, "z", "two.py"),
    ]


def test_text_outside_hunks_and_no_newline_notes_add_nothing() -> None:
    diff = unified_diff("a\nb", "a\nc", "f.py")
    assert "\\ No newline at end of file" in diff
    assert [(a.number, a.text) for a in added_rows("intro\n+not a hunk\n" + diff)] == [(2, "c")]
    assert added_rows("@@ -1 +1 @@\n-a\n+b\n+c\n") == [AddedRow(2, 1, "b")]  # a hunk of one
