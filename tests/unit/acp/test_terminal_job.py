"""What is new in an editor terminal's output between two reads, also once the editor
has dropped its start."""

from __future__ import annotations

from clover_code.acp.terminal_job import OutputDiff


def test_new_output_is_what_follows_the_last_read() -> None:
    diff = OutputDiff()
    assert diff.new_part("one\n", False) == "one\n"
    assert diff.new_part("one\n", False) == ""
    assert diff.new_part("one\ntwo\n", False) == "two\n"


def test_after_the_editor_dropped_the_start_the_old_tail_finds_the_new_part() -> None:
    diff = OutputDiff()
    diff.new_part("a" * 1000 + "MARK-1\n", False)
    assert diff.new_part("a" * 400 + "MARK-1\nnext\n", True) == "next\n"


def test_when_the_old_tail_is_gone_too_the_whole_comes_with_a_note() -> None:
    diff = OutputDiff()
    diff.new_part("first\n", False)
    assert diff.new_part("only new\n", True) == (
        "[... the editor dropped earlier output ...]\nonly new\n"
    )
