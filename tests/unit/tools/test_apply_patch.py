"""apply_patch: both patch formats, loose matching, clear errors, all-or-nothing."""

from __future__ import annotations

import difflib
from pathlib import Path

import pytest

from clover_code.errors import ToolError, WorkspaceError
from clover_code.tools.apply_patch import ApplyPatchArgs, ApplyPatchTool
from clover_code.tools.base import ToolContext
from clover_code.tools.patch_apply import apply_patch
from clover_code.tools.patch_parse import parse_patch
from clover_code.tools.workspace import Workspace

APP = "def add(a, b):\n    return a - b\n\n\ndef sub(a, b):\n    return a - b\n"


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "app.py").write_text(APP)
    (root / "old.txt").write_text("bye\n")
    (root / "notes.md").write_text("one\ntwo\nthree\n")
    return Workspace(root)


def snapshot(ws: Workspace) -> dict[str, bytes]:
    return {
        p.relative_to(ws.root).as_posix(): p.read_bytes()
        for p in sorted(ws.root.rglob("*"))
        if p.is_file()
    }


def envelope(*sections: str) -> str:
    return "*** Begin Patch\n" + "".join(sections) + "*** End Patch\n"


# ----------------------------------------------------------------- success


def test_envelope_adds_deletes_moves_and_updates(ws: Workspace) -> None:
    patch = envelope(
        "*** Add File: pkg/new.py\n+X = 1\n+Y = 2\n",
        "*** Delete File: old.txt\n",
        "*** Update File: app.py\n@@ def add(a, b):\n-    return a - b\n+    return a + b\n",
        "*** Update File: notes.md\n*** Move to: docs/notes.md\n@@\n one\n-two\n+2\n three\n",
    )
    result = apply_patch(ws, patch)
    assert (ws.root / "pkg/new.py").read_text() == "X = 1\nY = 2\n"
    assert not (ws.root / "old.txt").exists()
    assert (ws.root / "app.py").read_text() == APP.replace("a - b", "a + b", 1)
    assert not (ws.root / "notes.md").exists()
    assert (ws.root / "docs/notes.md").read_text() == "one\n2\nthree\n"
    assert result.display.paths == [
        "pkg/new.py",
        "old.txt",
        "app.py",
        "notes.md",
        "docs/notes.md",
    ]
    assert "+++ b/docs/notes.md" in result.display.diff
    assert "+    return a + b" in result.display.diff
    assert "moved notes.md to docs/notes.md" in result.text


def test_anchor_picks_the_right_one_of_equal_lines(ws: Workspace) -> None:
    patch = envelope(
        "*** Update File: app.py\n@@ def sub(a, b):\n-    return a - b\n+    return a - b  # ok\n"
    )
    apply_patch(ws, patch)
    assert (ws.root / "app.py").read_text().endswith("return a - b  # ok\n")
    assert (ws.root / "app.py").read_text().count("# ok") == 1


def test_end_of_file_marker_matches_the_last_occurrence(ws: Workspace) -> None:
    patch = envelope(
        "*** Update File: app.py\n@@\n-    return a - b\n+    return b - a\n*** End of File\n"
    )
    apply_patch(ws, patch)
    text = (ws.root / "app.py").read_text()
    assert text.endswith("return b - a\n") and "return a - b" in text


def test_pure_insertion_after_anchor(ws: Workspace) -> None:
    patch = envelope("*** Update File: notes.md\n@@ two\n+two and a half\n")
    apply_patch(ws, patch)
    assert (ws.root / "notes.md").read_text() == "one\ntwo\ntwo and a half\nthree\n"


def test_whitespace_tolerance_is_reported(ws: Workspace) -> None:
    patch = envelope(
        "*** Update File: app.py\n@@\n def add(a, b):   \n-  return a - b\n+    return a + b\n"
    )
    result = apply_patch(ws, patch)
    assert (ws.root / "app.py").read_text().startswith("def add(a, b):\n    return a + b\n")
    assert "matched ignoring" in result.text


def git_diff(old: str, new: str, path: str) -> str:
    body = "".join(
        difflib.unified_diff(
            old.splitlines(keepends=True), new.splitlines(keepends=True), f"a/{path}", f"b/{path}"
        )
    )
    return f"diff --git a/{path} b/{path}\nindex 123..456 100644\n{body}"


def test_unified_diff_with_several_hunks(ws: Workspace) -> None:
    old = "".join(f"line {i}\n" for i in range(1, 41))
    new = old.replace("line 3\n", "line three\n").replace("line 35\n", "")
    (ws.root / "long.txt").write_text(old)
    apply_patch(ws, git_diff(old, new, "long.txt") + git_diff(APP, APP.upper(), "app.py"))
    assert (ws.root / "long.txt").read_text() == new
    assert (ws.root / "app.py").read_text() == APP.upper()


def test_unified_diff_with_wrong_counts_and_a_fence(ws: Workspace) -> None:
    patch = "```diff\n--- a/notes.md\n+++ b/notes.md\n@@ -1,9 +1,9 @@\n one\n-two\n+TWO\n```\n"
    apply_patch(ws, patch)
    assert (ws.root / "notes.md").read_text() == "one\nTWO\nthree\n"


def test_unified_line_numbers_choose_between_equal_blocks(ws: Workspace) -> None:
    patch = (
        "--- a/app.py\n+++ b/app.py\n@@ -6,1 +6,1 @@\n-    return a - b\n+    return a - b - 0\n"
    )
    apply_patch(ws, patch)
    lines = (ws.root / "app.py").read_text().splitlines()
    assert lines[1] == "    return a - b" and lines[5] == "    return a - b - 0"


def test_unified_add_delete_and_rename(ws: Workspace) -> None:
    patch = (
        "--- /dev/null\n+++ b/src/new.txt\n@@ -0,0 +1,2 @@\n+a\n+b\n"
        "--- a/old.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-bye\n"
        "diff --git a/notes.md b/guide.md\nsimilarity index 100%\n"
        "rename from notes.md\nrename to guide.md\n"
    )
    apply_patch(ws, patch)
    assert (ws.root / "src/new.txt").read_text() == "a\nb\n"
    assert not (ws.root / "old.txt").exists()
    assert (ws.root / "guide.md").read_text() == "one\ntwo\nthree\n"


def test_git_rename_with_changes_and_orig_names(ws: Workspace) -> None:
    patch = (
        "diff --git a/notes.md b/docs/notes.md\nsimilarity index 80%\n"
        "rename from notes.md\nrename to docs/notes.md\nindex 1..2 100644\n"
        "--- a/notes.md\n+++ b/docs/notes.md\n@@ -1,3 +1,3 @@\n one\n-two\n+2\n three\n"
        "--- app.py.orig\t2024-01-01\n+++ app.py\t2024-01-02\n@@ -1,2 +1,2 @@\n"
        " def add(a, b):\n-    return a - b\n+    return a + b\n"
    )
    apply_patch(ws, patch)
    assert (ws.root / "docs/notes.md").read_text() == "one\n2\nthree\n"
    assert not (ws.root / "notes.md").exists()
    assert "a + b" in (ws.root / "app.py").read_text()


def test_move_to_the_same_path_is_an_update(ws: Workspace) -> None:
    apply_patch(ws, envelope("*** Update File: old.txt\n*** Move to: ./old.txt\n@@\n-bye\n+hi\n"))
    assert (ws.root / "old.txt").read_text() == "hi\n"


def test_no_newline_at_end_of_file(ws: Workspace) -> None:
    (ws.root / "n.txt").write_text("a\nb\n")
    patch = "--- a/n.txt\n+++ b/n.txt\n@@ -1,2 +1,2 @@\n a\n-b\n+c\n\\ No newline at end of file\n"
    apply_patch(ws, patch)
    assert (ws.root / "n.txt").read_text() == "a\nc"


def test_crlf_files_keep_their_line_ends(ws: Workspace) -> None:
    (ws.root / "win.txt").write_bytes(b"one\r\ntwo\r\n")
    apply_patch(ws, envelope("*** Update File: win.txt\n@@\n-two\n+2\n"))
    assert (ws.root / "win.txt").read_bytes() == b"one\r\n2\r\n"


def test_heredoc_wrapper_and_missing_end_are_forgiven(ws: Workspace) -> None:
    patch = "apply_patch <<'EOF'\n*** Begin Patch\n*** Delete File: old.txt\nEOF\n"
    apply_patch(ws, patch)
    assert not (ws.root / "old.txt").exists()


async def test_tool_runs_and_summarises(ws: Workspace) -> None:
    tool = ApplyPatchTool()
    args = ApplyPatchArgs(patch=envelope("*** Delete File: old.txt\n"))
    assert tool.summary(args) == "old.txt"
    result = await tool.run(args, ToolContext(workspace=ws))
    assert not result.is_error and "deleted old.txt" in result.text
    assert tool.spec().name == "apply_patch"


# ----------------------------------------------------------------- failures


def assert_untouched(ws: Workspace, before: dict[str, bytes]) -> None:
    assert snapshot(ws) == before


def test_failing_hunk_names_file_and_hunk_and_changes_nothing(ws: Workspace) -> None:
    before = snapshot(ws)
    patch = envelope(
        "*** Add File: fresh.txt\n+x\n",
        "*** Update File: notes.md\n@@\n-two\n+2\n",
        "*** Update File: app.py\n@@\n-    return a - b\n+    return a + b\n",
        "@@\n-nothing like this\n+x\n",
    )
    with pytest.raises(ToolError) as caught:
        apply_patch(ws, patch)
    message = str(caught.value)
    assert "hunk 2 of 'app.py'" in message
    assert "no file was changed" in message
    assert_untouched(ws, before)


def test_mismatch_error_shows_the_closest_lines(ws: Workspace) -> None:
    patch = envelope(
        "*** Update File: app.py\n@@\n def add(a, b):\n-    return a - c\n+    return a + b\n"
    )
    with pytest.raises(ToolError, match=r"hunk 1 of 'app.py'.*lines 1-2") as caught:
        apply_patch(ws, patch)
    assert "     1\tdef add(a, b):" in str(caught.value)


def test_hunks_out_of_order_are_explained(ws: Workspace) -> None:
    patch = envelope("*** Update File: notes.md\n@@\n-three\n+3\n@@\n-one\n+1\n")
    with pytest.raises(ToolError, match="file order"):
        apply_patch(ws, patch)


@pytest.mark.parametrize(
    ("section", "message"),
    [
        ("*** Add File: app.py\n+x\n", "cannot add 'app.py': it already exists"),
        ("*** Update File: nope.py\n@@\n-a\n+b\n", "'nope.py' does not exist"),
        ("*** Delete File: gone.txt\n", "'gone.txt' does not exist"),
        (
            "*** Update File: old.txt\n*** Move to: app.py\n@@\n-bye\n+hi\n",
            "cannot move 'old.txt' to 'app.py'",
        ),
        ("*** Update File: app.py\n@@ def nowhere():\n-x\n+y\n", "'def nowhere\\(\\):'"),
        ("*** Delete File: old.txt\n*** Update File: old.txt\n@@\n-bye\n+hi\n", "more than once"),
    ],
)
def test_bad_changes_change_nothing(ws: Workspace, section: str, message: str) -> None:
    before = snapshot(ws)
    patch = envelope("*** Add File: first.txt\n+made first\n", section)
    with pytest.raises(ToolError, match=message):
        apply_patch(ws, patch)
    assert_untouched(ws, before)


@pytest.mark.parametrize("path", ["../escape.txt", "/etc/passwd", ".git/config", "sub/.GIT/x"])
def test_paths_stay_in_the_workspace(ws: Workspace, path: str) -> None:
    before = snapshot(ws)
    with pytest.raises(WorkspaceError):
        apply_patch(ws, envelope("*** Add File: ok.txt\n+x\n", f"*** Add File: {path}\n+x\n"))
    assert_untouched(ws, before)


def test_binary_files_are_refused(ws: Workspace) -> None:
    (ws.root / "blob.bin").write_bytes(b"\x00\x01\x02")
    with pytest.raises(ToolError, match="binary"):
        apply_patch(ws, envelope("*** Update File: blob.bin\n@@\n-a\n+b\n"))


@pytest.mark.parametrize(
    ("patch", "message"),
    [
        ("", "the patch is empty"),
        ("*** Begin Patch\n+stray\n*** End Patch\n", "line 2 of the patch is outside any file"),
        ("*** Begin Patch\n*** Add File: a\nno plus\n", "line 3 .* starts with '\\+'"),
        ("*** Begin Patch\n*** Update File: a\n@@\n?x\n", "line 4 .* not '\\?x'"),
        ("*** Begin Patch\n*** Update File: a\n*** End Patch\n", "gives no hunks"),
        ("*** Begin Patch\n*** Delete File: a\n*** End Patch\n*** Add File: b\n", "after"),
        ("just some words\n", "names no files"),
        ("@@ -1 +1 @@\n-a\n+b\n", "before any '---'"),
    ],
)
def test_unreadable_patches(ws: Workspace, patch: str, message: str) -> None:
    before = snapshot(ws)
    with pytest.raises(ToolError, match=message):
        apply_patch(ws, patch)
    assert_untouched(ws, before)


def test_write_failure_rolls_back_what_was_written(ws: Workspace) -> None:
    # The second write needs a directory where a file stands, so it fails for
    # real after the first file has already been replaced.
    before = snapshot(ws)
    patch = envelope(
        "*** Update File: app.py\n@@\n-    return a - b\n+    return a + b\n",
        "*** Add File: fresh/deep/x.txt\n+x\n",
        "*** Delete File: old.txt\n",
        "*** Add File: notes.md/child.txt\n+x\n",
    )
    with pytest.raises(ToolError, match="every file was restored"):
        apply_patch(ws, patch)
    assert_untouched(ws, before)
    assert not (ws.root / "fresh").exists()


def test_parse_lists_every_path() -> None:
    changes = parse_patch(envelope("*** Update File: a\n*** Move to: b\n@@\n-x\n+y\n"))
    assert changes[0].paths == ("a", "b")
