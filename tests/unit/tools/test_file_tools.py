"""The file tools on real files: read, write, edit, list, glob, grep (both back ends)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from clover_code.errors import ToolError, WorkspaceError
from clover_code.tools.base import ToolContext
from clover_code.tools.edit_file import EditFileArgs, EditFileTool
from clover_code.tools.grep import Backend, GrepArgs, GrepTool, grep_files
from clover_code.tools.listing import GlobArgs, GlobTool, ListFilesArgs, ListFilesTool
from clover_code.tools.read_file import MAX_LINES, ReadFileArgs, ReadFileTool
from clover_code.tools.registry import default_tools
from clover_code.tools.workspace import Workspace
from clover_code.tools.write_file import WriteFileArgs, WriteFileTool
from tests.waiting import need_program


@pytest.fixture
def rg_installed() -> None:
    """Ripgrep is here (scripts/install-system installs it): skipped without it, failed in CI."""
    need_program("rg", "ripgrep")


@pytest.fixture
def root(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    repo.mkdir()
    return repo


@pytest.fixture
def ctx(root: Path) -> ToolContext:
    return ToolContext(workspace=Workspace(root))


def _put(root: Path, files: dict[str, str | bytes]) -> None:
    for rel, content in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content)


# --- read_file ---------------------------------------------------------------------------


async def test_read_numbers_lines_like_cat_n(ctx: ToolContext, root: Path) -> None:
    _put(root, {"f.py": "one\ntwo\r\nthree"})
    result = await ReadFileTool().run(ReadFileArgs(path="f.py"), ctx)
    assert result.text == "     1\tone\n     2\ttwo\n     3\tthree"
    assert result.display.total_lines == 3


async def test_read_window_with_offset_and_limit(ctx: ToolContext, root: Path) -> None:
    _put(root, {"f.txt": "".join(f"line {i}\n" for i in range(1, 11))})
    result = await ReadFileTool().run(ReadFileArgs(path="f.txt", offset=4, limit=2), ctx)
    assert result.text.splitlines()[:2] == ["     4\tline 4", "     5\tline 5"]
    assert "[showing lines 4-5 of 10; call read_file with offset=6 to read on]" in result.text


async def test_read_caps_lines_per_call(ctx: ToolContext, root: Path) -> None:
    _put(root, {"big.txt": "x\n" * (MAX_LINES + 500)})
    result = await ReadFileTool().run(ReadFileArgs(path="big.txt", limit=10_000), ctx)
    lines = result.text.splitlines()
    assert len(lines) == MAX_LINES + 1
    assert lines[-1] == (
        f"[showing lines 1-{MAX_LINES} of {MAX_LINES + 500}; "
        f"call read_file with offset={MAX_LINES + 1} to read on]"
    )


async def test_read_caps_bytes_per_call(ctx: ToolContext, root: Path) -> None:
    _put(root, {"wide.txt": ("y" * 1000 + "\n") * 1000})
    result = await ReadFileTool().run(ReadFileArgs(path="wide.txt"), ctx)
    shown = [line for line in result.text.splitlines() if "\t" in line]
    assert 200 < len(shown) < 300
    assert f"offset={len(shown) + 1}" in result.text


async def test_read_cuts_very_long_lines(ctx: ToolContext, root: Path) -> None:
    _put(root, {"min.js": "z" * 5000 + "\n"})
    result = await ReadFileTool().run(ReadFileArgs(path="min.js"), ctx)
    assert result.text.endswith("… [3000 more characters on this line]")


@pytest.mark.parametrize("content", [b"abc\x00def", b"\xff\xfe\xfa not utf-8 \x80\x81"])
async def test_read_refuses_binary_files(ctx: ToolContext, root: Path, content: bytes) -> None:
    _put(root, {"blob.bin": content})
    with pytest.raises(ToolError) as info:
        await ReadFileTool().run(ReadFileArgs(path="blob.bin"), ctx)
    assert str(info.value) == (
        f"'blob.bin' is a binary file ({len(content)} bytes); read_file shows text files only"
    )


async def test_read_missing_file_names_close_matches(ctx: ToolContext, root: Path) -> None:
    _put(root, {"src/config.py": "", "lib/settings.py": "", "other/settings.py": ""})
    with pytest.raises(ToolError) as info:
        await ReadFileTool().run(ReadFileArgs(path="src/confg.py"), ctx)
    assert str(info.value) == "file 'src/confg.py' does not exist; did you mean 'src/config.py'?"
    with pytest.raises(ToolError) as info:
        await ReadFileTool().run(ReadFileArgs(path="settings.py"), ctx)
    assert "'lib/settings.py'" in str(info.value)
    assert "'other/settings.py'" in str(info.value)
    with pytest.raises(ToolError, match="use list_files or glob"):
        await ReadFileTool().run(ReadFileArgs(path="zzzz/qqqq.rs"), ctx)


async def test_read_directory_empty_file_and_offset_past_end(ctx: ToolContext, root: Path) -> None:
    _put(root, {"d/x": "1\n2\n", "empty": ""})
    with pytest.raises(ToolError, match="is a directory; use list_files"):
        await ReadFileTool().run(ReadFileArgs(path="d"), ctx)
    result = await ReadFileTool().run(ReadFileArgs(path="empty"), ctx)
    assert result.text == "'empty' is an empty file."
    with pytest.raises(ToolError, match="offset 5 is past the end of 'd/x', which has 2 lines"):
        await ReadFileTool().run(ReadFileArgs(path="d/x", offset=5), ctx)


async def test_read_refuses_paths_outside(ctx: ToolContext, root: Path, tmp_path: Path) -> None:
    (tmp_path / "secret").write_text("s")
    (root / "peek").symlink_to(tmp_path / "secret")
    with pytest.raises(WorkspaceError):
        await ReadFileTool().run(ReadFileArgs(path="peek"), ctx)
    with pytest.raises(WorkspaceError):
        await ReadFileTool().run(ReadFileArgs(path="../secret"), ctx)


# --- write_file --------------------------------------------------------------------------


async def test_write_creates_file_and_parent_dirs_with_a_diff(ctx: ToolContext, root: Path) -> None:
    result = await WriteFileTool().run(WriteFileArgs(path="new/deep/f.py", content="a\nb\n"), ctx)
    assert (root / "new" / "deep" / "f.py").read_text() == "a\nb\n"
    assert result.text == "Created new/deep/f.py (2 lines)."
    assert result.display.diff.startswith("--- /dev/null\n+++ b/new/deep/f.py\n")
    assert result.display.created is True


async def test_write_new_file_mode_follows_umask(ctx: ToolContext, root: Path) -> None:
    old = os.umask(0o027)
    try:
        await WriteFileTool().run(WriteFileArgs(path="m.txt", content="x"), ctx)
    finally:
        os.umask(old)
    assert stat.S_IMODE((root / "m.txt").stat().st_mode) == 0o640


async def test_write_replaces_atomically_and_keeps_mode(ctx: ToolContext, root: Path) -> None:
    _put(root, {"run.sh": "echo old\n"})
    script = root / "run.sh"
    script.chmod(0o751)
    inode = script.stat().st_ino
    result = await WriteFileTool().run(WriteFileArgs(path="run.sh", content="echo new\n"), ctx)
    assert script.read_text() == "echo new\n"
    assert stat.S_IMODE(script.stat().st_mode) == 0o751
    assert script.stat().st_ino != inode  # a new file was renamed into place
    assert "-echo old\n+echo new\n" in result.display.diff
    assert result.text == "Wrote run.sh (1 lines, +1 -1)."
    assert sorted(p.name for p in root.iterdir()) == ["run.sh"]  # no temp file left


async def test_write_same_content_changes_nothing(ctx: ToolContext, root: Path) -> None:
    _put(root, {"same.txt": "x\n"})
    before = (root / "same.txt").stat().st_ino
    result = await WriteFileTool().run(WriteFileArgs(path="same.txt", content="x\n"), ctx)
    assert "nothing changed" in result.text
    assert (root / "same.txt").stat().st_ino == before


async def test_write_refuses_symlink_whose_target_is_outside(
    ctx: ToolContext, root: Path, tmp_path: Path
) -> None:
    target = tmp_path / "victim.txt"
    target.write_text("keep me\n")
    (root / "trap.txt").symlink_to(target)
    with pytest.raises(WorkspaceError, match="outside the workspace"):
        await WriteFileTool().run(WriteFileArgs(path="trap.txt", content="pwned"), ctx)
    assert target.read_text() == "keep me\n"
    assert (root / "trap.txt").is_symlink()


async def test_write_through_symlink_inside_updates_target_and_keeps_link(
    ctx: ToolContext, root: Path
) -> None:
    _put(root, {"real.txt": "old\n"})
    (root / "alias.txt").symlink_to("real.txt")
    await WriteFileTool().run(WriteFileArgs(path="alias.txt", content="new\n"), ctx)
    assert (root / "alias.txt").is_symlink()
    assert (root / "real.txt").read_text() == "new\n"


async def test_write_into_git_is_refused(ctx: ToolContext, root: Path) -> None:
    (root / ".git").mkdir()
    with pytest.raises(WorkspaceError, match="git internals"):
        await WriteFileTool().run(WriteFileArgs(path=".git/hooks/post-checkout", content="x"), ctx)
    assert not (root / ".git" / "hooks").exists()


async def test_write_through_dangling_link_inside_creates_target(
    ctx: ToolContext, root: Path
) -> None:
    (root / "later").symlink_to("made/later.txt")
    await WriteFileTool().run(WriteFileArgs(path="later", content="hi\n"), ctx)
    assert (root / "made" / "later.txt").read_text() == "hi\n"


# --- edit_file ---------------------------------------------------------------------------

SOURCE = "def f():\n    return 1\n\n\ndef g():\n    return 2\n"


async def test_edit_replaces_one_occurrence(ctx: ToolContext, root: Path) -> None:
    _put(root, {"m.py": SOURCE})
    args = EditFileArgs(path="m.py", old_string="    return 2\n", new_string="    return 3\n")
    result = await EditFileTool().run(args, ctx)
    assert (root / "m.py").read_text() == SOURCE.replace("return 2", "return 3")
    assert result.text.startswith("Edited m.py: replaced 1 occurrence (+1 -1 lines).")
    assert "     6\t    return 3" in result.text
    assert "-    return 2\n+    return 3\n" in result.display.diff


async def test_edit_not_found_shows_closest_lines(ctx: ToolContext, root: Path) -> None:
    _put(root, {"m.py": SOURCE})
    args = EditFileArgs(path="m.py", old_string="def g():\n    return 20\n", new_string="x")
    with pytest.raises(ToolError) as info:
        await EditFileTool().run(args, ctx)
    message = str(info.value)
    assert message.startswith("old_string was not found in 'm.py'; lines 5-6 are the most similar")
    assert "     5\tdef g():\n     6\t    return 2\n" in message


async def test_edit_not_found_names_a_whitespace_difference(ctx: ToolContext, root: Path) -> None:
    _put(root, {"m.py": SOURCE})
    args = EditFileArgs(path="m.py", old_string="def f():\n\treturn 1", new_string="x")
    with pytest.raises(ToolError, match="lines 1-2 differ only in whitespace"):
        await EditFileTool().run(args, ctx)


async def test_edit_not_found_spots_pasted_line_numbers(ctx: ToolContext, root: Path) -> None:
    _put(root, {"m.py": SOURCE})
    args = EditFileArgs(path="m.py", old_string="     2\t    return 1", new_string="x")
    with pytest.raises(ToolError, match="line numbers, which are not part of the file"):
        await EditFileTool().run(args, ctx)


async def test_edit_ambiguous_match_lists_lines(ctx: ToolContext, root: Path) -> None:
    _put(root, {"m.py": SOURCE})
    args = EditFileArgs(path="m.py", old_string="    return", new_string="    yield")
    with pytest.raises(ToolError) as info:
        await EditFileTool().run(args, ctx)
    assert str(info.value) == (
        "old_string occurs 2 times in 'm.py' (lines 2, 6); include more surrounding lines "
        "to pick one, or set replace_all to true"
    )
    assert (root / "m.py").read_text() == SOURCE


async def test_edit_replace_all(ctx: ToolContext, root: Path) -> None:
    _put(root, {"m.py": SOURCE})
    args = EditFileArgs(path="m.py", old_string="return", new_string="yield", replace_all=True)
    result = await EditFileTool().run(args, ctx)
    assert (root / "m.py").read_text().count("yield") == 2
    assert result.text == "Edited m.py: replaced 2 occurrences (+2 -2 lines)."
    assert result.display.replacements == 2


async def test_edit_identical_or_empty_strings_are_refused(ctx: ToolContext, root: Path) -> None:
    _put(root, {"m.py": SOURCE})
    with pytest.raises(ToolError, match="identical, so there is nothing to change"):
        await EditFileTool().run(EditFileArgs(path="m.py", old_string="f", new_string="f"), ctx)
    with pytest.raises(ToolError, match="old_string is empty"):
        await EditFileTool().run(EditFileArgs(path="m.py", old_string="", new_string="x"), ctx)


async def test_edit_missing_and_binary_files(ctx: ToolContext, root: Path) -> None:
    _put(root, {"bin.dat": b"\x00\x01\x02"})
    with pytest.raises(ToolError, match=r"file 'nope\.py' does not exist"):
        await EditFileTool().run(EditFileArgs(path="nope.py", old_string="a", new_string="b"), ctx)
    with pytest.raises(ToolError, match="binary file"):
        await EditFileTool().run(EditFileArgs(path="bin.dat", old_string="a", new_string="b"), ctx)


async def test_edit_keeps_crlf_line_ends(ctx: ToolContext, root: Path) -> None:
    _put(root, {"w.txt": b"alpha\r\nbeta\r\ngamma\r\n"})
    args = EditFileArgs(path="w.txt", old_string="alpha\nbeta\n", new_string="alpha\nBETA\n")
    await EditFileTool().run(args, ctx)
    assert (root / "w.txt").read_bytes() == b"alpha\r\nBETA\r\ngamma\r\n"


async def test_edit_keeps_mode(ctx: ToolContext, root: Path) -> None:
    _put(root, {"x.sh": "echo 1\n"})
    (root / "x.sh").chmod(0o700)
    await EditFileTool().run(EditFileArgs(path="x.sh", old_string="1", new_string="2"), ctx)
    assert stat.S_IMODE((root / "x.sh").stat().st_mode) == 0o700


# --- list_files and glob -----------------------------------------------------------------


async def test_list_files_sorted_gitignore_aware(ctx: ToolContext, root: Path) -> None:
    _put(
        root,
        {
            ".gitignore": "dist/\n*.pyc\n",
            "dist/bundle.js": "",
            "src/a.py": "",
            "src/a.pyc": "",
            "src/pkg/b.py": "",
            "README.md": "",
            ".git/config": "",
        },
    )
    (root / "link").symlink_to("src/a.py")
    result = await ListFilesTool().run(ListFilesArgs(), ctx)
    assert result.text.splitlines() == [
        ".gitignore",
        "README.md",
        "link -> src/a.py",
        "src/",
        "src/a.py",
        "src/pkg/",
    ]
    deeper = await ListFilesTool().run(ListFilesArgs(path="src", depth=5), ctx)
    assert deeper.text.splitlines() == ["src/a.py", "src/pkg/", "src/pkg/b.py"]


async def test_list_files_caps_entries(ctx: ToolContext, root: Path) -> None:
    _put(root, {f"many/f{i:04}.txt": "" for i in range(600)})
    result = await ListFilesTool().run(ListFilesArgs(path="many"), ctx)
    lines = result.text.splitlines()
    assert len(lines) == 501
    assert lines[-1].startswith("[only the first 500 entries are shown;")


async def test_list_files_errors(ctx: ToolContext, root: Path) -> None:
    _put(root, {"f.txt": ""})
    with pytest.raises(ToolError, match="is a file, not a directory; use read_file"):
        await ListFilesTool().run(ListFilesArgs(path="f.txt"), ctx)
    with pytest.raises(ToolError, match="directory 'nothere' does not exist"):
        await ListFilesTool().run(ListFilesArgs(path="nothere"), ctx)
    with pytest.raises(WorkspaceError):
        await ListFilesTool().run(ListFilesArgs(path=".."), ctx)


async def test_glob_sorted_newest_first_and_gitignore_aware(ctx: ToolContext, root: Path) -> None:
    _put(
        root,
        {
            ".gitignore": "gen/\n",
            "old.py": "",
            "src/mid.py": "",
            "src/new.py": "",
            "src/x.ts": "",
            "gen/made.py": "",
        },
    )
    for age, rel in enumerate(["src/new.py", "src/mid.py", "old.py"]):
        os.utime(root / rel, (1_000_000 - age * 1000, 1_000_000 - age * 1000))
    result = await GlobTool().run(GlobArgs(pattern="**/*.py"), ctx)
    assert result.text.splitlines() == ["src/new.py", "src/mid.py", "old.py"]
    by_name = await GlobTool().run(GlobArgs(pattern="*.{py,ts}", path="src"), ctx)
    assert sorted(by_name.text.splitlines()) == ["src/mid.py", "src/new.py", "src/x.ts"]
    anchored = await GlobTool().run(GlobArgs(pattern="src/*.py"), ctx)
    assert anchored.text.splitlines() == ["src/new.py", "src/mid.py"]
    none = await GlobTool().run(GlobArgs(pattern="*.rs"), ctx)
    assert none.text == "No files match '*.rs' in '.' (ignored files are skipped)."


async def test_glob_caps_results(ctx: ToolContext, root: Path) -> None:
    _put(root, {f"d/f{i:04}.txt": "" for i in range(520)})
    result = await GlobTool().run(GlobArgs(pattern="*.txt"), ctx)
    assert result.text.splitlines()[-1] == (
        "[20 more matches not shown; use a narrower pattern or path]"
    )


# --- grep ----------------------------------------------------------------------------------


def _grep_tree(root: Path) -> None:
    _put(
        root,
        {
            ".gitignore": "ignored/\n*.min.js\n",
            ".ignore": "skip.txt\n",
            "a.py": "import os\n\ndef alpha():\n    return 'needle'\n",
            "a-c.txt": "needle in a-c\n",
            "a/b.txt": "first\nneedle one\nmiddle\nmiddle\nmiddle\nneedle two\nlast\n",
            "src/deep/mod.py": "x = 1\nNEEDLE = 'upper'\ny = 2\n",
            "src/.hidden.cfg": "needle=hidden\n",
            "src/crlf.txt": "needle crlf\r\nother\r\n",
            "src/app.min.js": "needle minified\n",
            "ignored/gone.py": "needle ignored\n",
            "skip.txt": "needle skipped\n",
            "blob.bin": b"needle\x00binary\n",
            ".git/config": "needle in git\n",
            "nested/.git/HEAD": "ref\n",
            "nested/kept.min.js": "needle nested repo\n",
        },
    )
    (root / "src" / "link.py").symlink_to("deep/mod.py")


GREP_CASES = [
    GrepArgs(pattern="needle"),
    GrepArgs(pattern="needle", case_insensitive=True),
    GrepArgs(pattern="needle", context=1),
    GrepArgs(pattern="needle", context=2, case_insensitive=True),
    GrepArgs(pattern="needle", max_results=2),
    GrepArgs(pattern="needle", max_results=1, context=2),
    GrepArgs(pattern="needle", glob="*.py", case_insensitive=True),
    GrepArgs(pattern="needle", glob="src/**"),
    GrepArgs(pattern="needle", path="src", case_insensitive=True),
    GrepArgs(pattern="needle", path="a/b.txt", context=1),
    GrepArgs(pattern="needle", path="ignored"),
    GrepArgs(pattern=r"^\s+return\b"),
    GrepArgs(pattern="crlf$"),
    GrepArgs(pattern="absent-text"),
]


@pytest.mark.usefixtures("rg_installed")
@pytest.mark.parametrize(
    "args", GREP_CASES, ids=lambda a: repr(a.model_dump(exclude_defaults=True))
)
async def test_grep_backends_give_identical_output(
    ctx: ToolContext, root: Path, args: GrepArgs
) -> None:
    _grep_tree(root)
    with_rg = await grep_files(ctx.workspace, args, backend="rg")
    with_python = await grep_files(ctx.workspace, args, backend="python")
    assert with_rg.display.backend == "rg"
    assert with_python.display.backend == "python"
    assert with_rg.text == with_python.text


@pytest.mark.parametrize("backend", ["python", "rg"])
async def test_grep_output_format(ctx: ToolContext, root: Path, backend: Backend) -> None:
    if backend == "rg":
        need_program("rg", "ripgrep")
    _grep_tree(root)
    plain = await grep_files(ctx.workspace, GrepArgs(pattern="needle"), backend=backend)
    assert plain.text.splitlines() == [
        "a/b.txt:2:needle one",
        "a/b.txt:6:needle two",
        "a-c.txt:1:needle in a-c",
        "a.py:4:    return 'needle'",
        "nested/kept.min.js:1:needle nested repo",
        "src/.hidden.cfg:1:needle=hidden",
        "src/crlf.txt:1:needle crlf",
    ]
    context = await grep_files(
        ctx.workspace,
        GrepArgs(pattern="needle", path="a", context=1),
        backend=backend,
    )
    assert context.text.splitlines() == [
        "a/b.txt-1-first",
        "a/b.txt:2:needle one",
        "a/b.txt-3-middle",
        "--",
        "a/b.txt-5-middle",
        "a/b.txt:6:needle two",
        "a/b.txt-7-last",
    ]
    capped = await grep_files(
        ctx.workspace,
        GrepArgs(pattern="needle", max_results=2),
        backend=backend,
    )
    assert capped.text.splitlines()[-1] == (
        "[stopped at 2 matching lines; narrow the pattern, path or glob, or raise max_results]"
    )


@pytest.mark.usefixtures("rg_installed")
async def test_grep_falls_back_to_python_for_patterns_rg_rejects(
    ctx: ToolContext, root: Path
) -> None:
    _grep_tree(root)
    result = await GrepTool().run(GrepArgs(pattern=r"needle(?= one)"), ctx)
    assert result.display.backend == "python"
    assert result.text == "a/b.txt:2:needle one"


@pytest.mark.parametrize("backend", ["auto", "python"])
async def test_grep_invalid_regex_is_one_clear_error(
    ctx: ToolContext, root: Path, backend: Backend
) -> None:
    _grep_tree(root)
    with pytest.raises(ToolError, match=r"pattern /needle\(/ is not a valid regular expression"):
        await grep_files(ctx.workspace, GrepArgs(pattern="needle("), backend=backend)


@pytest.mark.usefixtures("rg_installed")
async def test_grep_uses_python_when_ignore_files_above_the_root_would_leak_in(
    tmp_path: Path,
) -> None:
    outer = tmp_path / "outer"
    repo = outer / "repo"
    _put(outer, {".gitignore": "*.py\n"})
    _put(repo, {"src/m.py": "needle\n"})
    ctx = ToolContext(workspace=Workspace(repo))
    sub = await GrepTool().run(GrepArgs(pattern="needle", path="src"), ctx)
    whole = await GrepTool().run(GrepArgs(pattern="needle"), ctx)
    assert sub.display.backend == "python"
    assert whole.display.backend == "rg"
    assert sub.text == whole.text == "src/m.py:1:needle"


async def test_grep_no_match_and_missing_path(ctx: ToolContext, root: Path) -> None:
    _grep_tree(root)
    result = await GrepTool().run(GrepArgs(pattern="zzz"), ctx)
    assert result.text == "No matches for /zzz/ in '.'."
    with pytest.raises(ToolError, match="path 'nowhere' does not exist"):
        await GrepTool().run(GrepArgs(pattern="x", path="nowhere"), ctx)


# --- registry ------------------------------------------------------------------------------


def test_default_tools_and_their_schemas() -> None:
    names = [tool.name for tool in default_tools(shell=True)]
    assert names == [
        "read_file",
        "write_file",
        "edit_file",
        "apply_patch",
        "list_files",
        "glob",
        "grep",
        "repo_map",
        "todo",
        "shell",
        "job_output",
        "job_stop",
    ]
    assert "shell" not in [tool.name for tool in default_tools(shell=False)]
    for tool in default_tools(shell=True):
        spec = tool.spec()
        assert spec.description
        for name, prop in spec.parameters["properties"].items():
            assert prop.get("description"), f"{tool.name}.{name} has no description"
