"""The JSON result's ``edits``: one report per file edited, each with its own
low-confidence tokens, for an edit of one file and for a patch of several."""

from __future__ import annotations

from clover_code import protocol as p
from clover_code.headless.record import RunRecord
from clover_code.protocol.confidence import FileLowConfidence


def _finished(display: p.ToolDisplay, low: p.EditConfidence | None) -> p.ToolCallFinished:
    return p.ToolCallFinished(
        call_id="c1",
        name="apply_patch",
        status="ok",
        result="ok",
        display=display,
        low_confidence=low,
    )


def _edits(record: RunRecord) -> list[tuple[str, int, list[int], bool]]:
    return [
        (e.path, e.low_confidence_tokens, e.low_confidence_lines, e.confidence_known)
        for e in record.edits
    ]


def test_a_patch_of_two_files_reports_each_files_share() -> None:
    record = RunRecord()
    low = p.EditConfidence(
        tokens=3,
        lines=[1, 4],
        changed=9,
        below=0.5,
        files={
            "one.py": FileLowConfidence(tokens=1, lines=[4]),
            "two.py": FileLowConfidence(tokens=2, lines=[1]),
        },
    )
    patch = p.PatchApplied(diff="", paths=["one.py", "two.py", "gone.py"])
    record(_finished(patch, low))
    assert _edits(record) == [
        ("one.py", 1, [4], True),
        ("two.py", 2, [1], True),
        ("gone.py", 0, [], True),  # lost lines only: nothing to rate, nothing unsure
    ]


def test_a_patch_without_confidences_reports_each_file_unknown() -> None:
    record = RunRecord()
    record(_finished(p.PatchApplied(diff="", paths=["a.py", "b.py"]), None))
    assert _edits(record) == [("a.py", 0, [], False), ("b.py", 0, [], False)]


def test_a_failed_patch_is_no_edit() -> None:
    record = RunRecord()
    failed = _finished(p.PatchApplied(diff="", paths=["a.py"]), None).model_copy(
        update={"status": "error"}
    )
    record(failed)
    assert record.edits == []


def test_an_edit_of_one_file_keeps_the_whole_count() -> None:
    record = RunRecord()
    low = p.EditConfidence(tokens=2, lines=[3], changed=5, below=0.5)
    edit = p.FileEdit(path="f.py", diff="")
    record(_finished(edit, low))
    assert _edits(record) == [("f.py", 2, [3], True)]
