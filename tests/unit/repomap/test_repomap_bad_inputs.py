"""The repo map on bad input: unparsable, huge, minified and binary files, a missing
grammar, and a repository with 100k files. Each gives a clear note, never an error."""

from __future__ import annotations

from pathlib import Path

import pytest

from clover_code.repomap import RepoMap


def make(root: Path, files: dict[str, str | bytes]) -> Path:
    for rel, content in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content)
    return root


GOOD = "def good_function_here():\n    return 1\n"


def test_file_tree_sitter_cannot_parse_keeps_what_it_can(tmp_path: Path) -> None:
    make(
        tmp_path,
        {
            "ok.py": GOOD,
            "broken.py": "def before_the_error():\n    pass\n\nclass (((:\n  ]]] = = =\n",
            "garbage.py": "))))(((( }}}} @@@ !!! \x7f\n" * 50,
        },
    )
    result = RepoMap(tmp_path, tmp_path / "c.sqlite3").build(2000)
    assert "good_function_here" in result.text
    assert "before_the_error" in result.text
    assert result.notes == []


# A deadline, not a speed test: parsing the 50 MiB bundle would take far longer.
@pytest.mark.timeout(120)
def test_huge_minified_js_is_skipped_with_a_note(tmp_path: Path) -> None:
    line = b"var a=function(){return 1};" * 40
    with open(tmp_path / "bundle.min.js", "wb") as f:
        for _ in range(50 * 1024 * 1024 // len(line)):
            f.write(line)
    make(tmp_path, {"app.js": "function realAppFunction() {\n  return 1;\n}\n"})
    make(tmp_path, {"small.min.js": "var q=function(){return 2};" * 200})
    result = RepoMap(tmp_path, None).build(2000)
    assert "realAppFunction" in result.text
    assert "bundle.min.js" not in result.text
    assert any("bundle.min.js" in n and "larger than 1 MiB" in n for n in result.notes)
    assert any("small.min.js" in n and "minified" in n for n in result.notes)


def test_binary_file_named_py_is_skipped_with_a_note(tmp_path: Path) -> None:
    make(tmp_path, {"ok.py": GOOD, "blob.py": bytes(range(256)) * 64})
    result = RepoMap(tmp_path, None).build(2000)
    assert "good_function_here" in result.text
    assert result.notes == [
        "skipped 1 file (e.g. blob.py): binary content (NUL bytes), not source text."
    ]


def test_language_without_grammar_is_skipped_with_a_note(tmp_path: Path) -> None:
    make(tmp_path, {"ok.py": GOOD, "Main.kt": "fun main() {}\n", "Util.kt": "fun util() {}\n"})
    result = RepoMap(tmp_path, None).build(2000)
    assert "good_function_here" in result.text
    [note] = result.notes
    assert note.startswith("skipped 2 files of Kotlin (e.g. Main.kt): no tree-sitter grammar")
    assert "pip install tree-sitter-kotlin" in note


def test_file_cap_keeps_the_shallowest_files(tmp_path: Path) -> None:
    make(tmp_path, {"top_level.py": "def shallow_function():\n    pass\n"})
    for i in range(30):
        make(tmp_path, {f"deep/er/mod{i}.py": f"def deep_function_{i}():\n    pass\n"})
    result = RepoMap(tmp_path, None, max_files=10).build(4000)
    assert result.files == 10
    assert "shallow_function" in result.text
    assert any("more than 10 source files" in note for note in result.notes)


def test_unreadable_file_is_skipped_with_a_note(tmp_path: Path) -> None:
    make(tmp_path, {"ok.py": GOOD, "secret.py": "def hidden():\n    pass\n"})
    (tmp_path / "secret.py").chmod(0)
    try:
        if (tmp_path / "secret.py").open("rb").readable():
            pytest.skip("running as root: every file is readable")
    except PermissionError:
        pass
    result = RepoMap(tmp_path, None).build(2000)
    assert "good_function_here" in result.text
    assert any("could not be read" in note for note in result.notes)


@pytest.mark.slow
def test_repo_with_100k_files(tmp_path: Path) -> None:
    for d in range(400):
        folder = tmp_path / f"pkg{d:03}"
        folder.mkdir()
        for i in range(250):
            (folder / f"m{i:03}.py").write_bytes(b"")
    make(tmp_path, {"main.py": "def entry_point_function():\n    pass\n"})
    repo_map = RepoMap(tmp_path, tmp_path / ".cache.sqlite3", max_files=2000)
    result = repo_map.build(1000)
    assert result.files == 2000
    assert "entry_point_function" in result.text
    assert any("more than 2,000 source files" in note for note in result.notes)
    assert repo_map.build(1000).from_cache
