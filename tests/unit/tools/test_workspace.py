"""Workspace confinement and the gitignore-aware walk, on real files and links."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from clover_code.errors import ToolError, WorkspaceError
from clover_code.tools.workspace import Workspace


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    out = tmp_path / "outside"
    out.mkdir()
    (out / "secret.txt").write_text("secret\n")
    return out


@pytest.fixture
def root(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    (repo / "sub").mkdir(parents=True)
    (repo / "a.txt").write_text("a\n")
    (repo / "sub" / "b.txt").write_text("b\n")
    (repo / ".git").mkdir()
    (repo / ".git" / "config").write_text("[core]\n")
    return repo


@pytest.fixture
def ws(root: Path) -> Workspace:
    return Workspace(root)


# --- plain paths ---------------------------------------------------------------------


def test_relative_path_is_taken_from_the_root(ws: Workspace, root: Path) -> None:
    assert ws.resolve("a.txt") == root / "a.txt"
    assert ws.resolve("sub/b.txt") == root / "sub" / "b.txt"
    assert ws.resolve("./sub/../a.txt") == root / "a.txt"
    assert ws.resolve(".") == root


def test_relative_path_may_name_a_missing_file(ws: Workspace, root: Path) -> None:
    assert ws.resolve("new/dir/file.py", write=True) == root / "new" / "dir" / "file.py"


def test_dotdot_leaving_the_root_is_refused_with_one_clear_sentence(ws: Workspace) -> None:
    with pytest.raises(WorkspaceError) as info:
        ws.resolve("../x")
    assert str(info.value) == (
        f"path '../x' is outside the workspace {ws.root}; file tools only act inside it"
    )
    with pytest.raises(WorkspaceError):
        ws.resolve("sub/../../outside/secret.txt")


def test_absolute_path_inside_is_accepted(ws: Workspace, root: Path) -> None:
    assert ws.resolve(str(root / "sub" / "b.txt")) == root / "sub" / "b.txt"
    assert ws.resolve(str(root)) == root


def test_absolute_path_outside_is_refused(ws: Workspace, outside: Path) -> None:
    with pytest.raises(WorkspaceError, match="outside the workspace"):
        ws.resolve(str(outside / "secret.txt"))
    with pytest.raises(WorkspaceError, match="outside the workspace"):
        ws.resolve("/etc/passwd", write=True)


def test_a_sibling_with_the_root_as_name_prefix_is_outside(ws: Workspace, root: Path) -> None:
    sibling = root.parent / (root.name + "-other")
    sibling.mkdir()
    with pytest.raises(WorkspaceError):
        ws.resolve(str(sibling / "x"))


def test_empty_and_nul_paths_are_refused(ws: Workspace) -> None:
    with pytest.raises(WorkspaceError, match="empty"):
        ws.resolve("")
    with pytest.raises(WorkspaceError, match="NUL"):
        ws.resolve("a\x00b")


def test_writing_the_root_or_a_directory_is_refused(ws: Workspace) -> None:
    with pytest.raises(WorkspaceError, match="directory"):
        ws.resolve(".", write=True)
    with pytest.raises(WorkspaceError, match="is a directory"):
        ws.resolve("sub", write=True)


def test_workspace_error_is_a_tool_error() -> None:
    assert issubclass(WorkspaceError, ToolError)


def test_root_must_be_a_directory(tmp_path: Path) -> None:
    with pytest.raises(WorkspaceError, match="not a directory"):
        Workspace(tmp_path / "missing")


def test_root_given_through_a_symlink_is_made_real(tmp_path: Path, root: Path) -> None:
    link = tmp_path / "link-to-repo"
    link.symlink_to(root)
    ws = Workspace(link)
    assert ws.root == root
    # A path spelled through the linked root is still inside.
    assert ws.resolve(str(link / "a.txt")) == root / "a.txt"


def test_relative_for_display(ws: Workspace, root: Path) -> None:
    assert ws.relative(root) == "."
    assert ws.relative(root / "sub" / "b.txt") == "sub/b.txt"
    assert ws.relative(Path("/elsewhere/x")) == "/elsewhere/x"


# --- symbolic links --------------------------------------------------------------------


def test_symlinked_parent_directory_pointing_outside_is_refused(
    ws: Workspace, root: Path, outside: Path
) -> None:
    (root / "linkdir").symlink_to(outside, target_is_directory=True)
    for write in (False, True):
        with pytest.raises(WorkspaceError, match="symbolic link") as info:
            ws.resolve("linkdir/secret.txt", write=write)
        assert str(outside / "secret.txt") in str(info.value)
        with pytest.raises(WorkspaceError):
            ws.resolve("linkdir/new.txt", write=write)


def test_symlinked_file_pointing_outside_is_refused_for_read_and_write(
    ws: Workspace, root: Path, outside: Path
) -> None:
    (root / "link.txt").symlink_to(outside / "secret.txt")
    with pytest.raises(WorkspaceError, match="outside the workspace"):
        ws.resolve("link.txt")
    with pytest.raises(WorkspaceError, match="outside the workspace"):
        ws.resolve("link.txt", write=True)


def test_dangling_link_pointing_outside_is_refused(
    ws: Workspace, root: Path, outside: Path
) -> None:
    (root / "dangling").symlink_to(outside / "not-there.txt")
    with pytest.raises(WorkspaceError, match="outside the workspace"):
        ws.resolve("dangling")
    with pytest.raises(WorkspaceError, match="outside the workspace"):
        ws.resolve("dangling", write=True)


def test_dangling_link_pointing_inside_resolves_to_its_target(ws: Workspace, root: Path) -> None:
    (root / "dangling").symlink_to("sub/future.txt")
    assert ws.resolve("dangling") == root / "sub" / "future.txt"
    assert ws.resolve("dangling", write=True) == root / "sub" / "future.txt"


def test_symlink_inside_pointing_inside_resolves_to_its_target(ws: Workspace, root: Path) -> None:
    (root / "alias.txt").symlink_to(root / "sub" / "b.txt")
    (root / "subalias").symlink_to("sub", target_is_directory=True)
    assert ws.resolve("alias.txt", write=True) == root / "sub" / "b.txt"
    assert ws.resolve("subalias/b.txt") == root / "sub" / "b.txt"


def test_link_out_and_back_in_is_accepted(ws: Workspace, root: Path, outside: Path) -> None:
    # outside/back -> repo/sub: the real path is inside, so it is fine.
    (outside / "back").symlink_to(root / "sub", target_is_directory=True)
    (root / "roundtrip").symlink_to(outside / "back", target_is_directory=True)
    assert ws.resolve("roundtrip/b.txt") == root / "sub" / "b.txt"


def test_symlink_loop_is_refused(ws: Workspace, root: Path) -> None:
    (root / "loop1").symlink_to("loop2")
    (root / "loop2").symlink_to("loop1")
    with pytest.raises(WorkspaceError, match="loop"):
        ws.resolve("loop1", write=True)


# --- git internals ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "path",
    [".git", ".git/config", ".git/hooks/pre-commit", "sub/.git/x", ".GIT/config", ".Git/HEAD"],
)
def test_git_internals_are_refused(ws: Workspace, path: str) -> None:
    for write in (False, True):
        with pytest.raises(WorkspaceError, match=r"git internals \(\.git\)"):
            ws.resolve(path, write=write)


def test_git_internals_by_absolute_path_are_refused(ws: Workspace, root: Path) -> None:
    with pytest.raises(WorkspaceError, match="git internals"):
        ws.resolve(str(root / ".git" / "config"))


def test_git_internals_through_a_symlink_are_refused(ws: Workspace, root: Path) -> None:
    (root / "gitdir").symlink_to(".git", target_is_directory=True)
    (root / "cfg").symlink_to(".git/config")
    with pytest.raises(WorkspaceError, match="git internals"):
        ws.resolve("gitdir/config")
    with pytest.raises(WorkspaceError, match="git internals"):
        ws.resolve("gitdir")
    with pytest.raises(WorkspaceError, match="git internals"):
        ws.resolve("cfg", write=True)


def test_names_that_only_start_like_git_are_fine(ws: Workspace, root: Path) -> None:
    assert ws.resolve(".gitignore", write=True) == root / ".gitignore"
    assert ws.resolve(".github/workflows/ci.yml") == root / ".github" / "workflows" / "ci.yml"
    assert ws.resolve("sub/x.git") == root / "sub" / "x.git"
    assert ws.resolve(".git/../a.txt") == root / "a.txt"


# --- ignore rules and the walk ---------------------------------------------------------


def _tree(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def _walked(ws: Workspace, start: Path | None = None, max_depth: int | None = None) -> list[str]:
    return [e.rel + ("/" if e.is_dir else "") for e in ws.walk(start, max_depth=max_depth)]


def test_walk_applies_gitignore_files_at_every_level(ws: Workspace, root: Path) -> None:
    _tree(
        root,
        {
            ".gitignore": "*.log\nbuild/\n!keep.log\n",
            "app.log": "",
            "keep.log": "",
            "build/out.js": "",
            "src/main.py": "",
            "src/.gitignore": "/local.txt\ngen/\n",
            "src/local.txt": "",
            "src/deep/local.txt": "",
            "src/gen/x.py": "",
            "src/deep/trace.log": "",
        },
    )
    assert _walked(ws) == [
        ".gitignore",
        "a.txt",
        "keep.log",
        "src/",
        "src/.gitignore",
        "src/deep/",
        "src/deep/local.txt",
        "src/main.py",
        "sub/",
        "sub/b.txt",
    ]


def test_walk_honours_info_exclude_and_dot_ignore_files(ws: Workspace, root: Path) -> None:
    (root / ".git" / "info").mkdir()
    (root / ".git" / "info" / "exclude").write_text("secret.env\n")
    _tree(root, {"secret.env": "", ".ignore": "*.tmp\n", "x.tmp": "", "sub/.rgignore": "b.txt\n"})
    walked = _walked(ws)
    assert "secret.env" not in walked
    assert "x.tmp" not in walked
    assert "sub/b.txt" not in walked
    assert "a.txt" in walked


def test_gitignore_beats_info_exclude_and_deeper_files_win(ws: Workspace, root: Path) -> None:
    (root / ".git" / "info").mkdir()
    (root / ".git" / "info" / "exclude").write_text("*.dat\n")
    _tree(
        root,
        {
            ".gitignore": "!wanted.dat\n*.csv\n",
            "sub/.gitignore": "!kept.csv\n",
            "wanted.dat": "",
            "other.dat": "",
            "sub/kept.csv": "",
            "sub/dropped.csv": "",
        },
    )
    walked = _walked(ws)
    assert "wanted.dat" in walked
    assert "other.dat" not in walked
    assert "sub/kept.csv" in walked
    assert "sub/dropped.csv" not in walked


def test_nested_repository_does_not_inherit_outer_gitignore(ws: Workspace, root: Path) -> None:
    _tree(root, {".gitignore": "*.txt\n", "nested/.git/HEAD": "", "nested/note.txt": ""})
    walked = _walked(ws)
    assert "nested/note.txt" in walked
    assert "a.txt" not in walked
    assert not any(".git/" in rel or rel.endswith(".git/") for rel in walked)


def test_walk_never_shows_git_in_any_case(ws: Workspace, root: Path) -> None:
    _tree(root, {"sub/.GIT/objects/x": "", "sub/.git": "gitdir: elsewhere\n"})
    walked = _walked(ws)
    assert not any(part.casefold() == ".git" for rel in walked for part in rel.split("/"))


def test_walk_lists_symlinks_without_following_them(
    ws: Workspace, root: Path, outside: Path
) -> None:
    (root / "out").symlink_to(outside, target_is_directory=True)
    entries = {e.rel: e for e in ws.walk()}
    assert entries["out"].is_symlink and not entries["out"].is_dir
    assert not any(rel.startswith("out/") for rel in entries)


def test_walk_depth_limit(ws: Workspace, root: Path) -> None:
    _tree(root, {"sub/deeper/c.txt": ""})
    assert _walked(ws, max_depth=1) == ["a.txt", "sub/"]
    assert "sub/deeper/" in _walked(ws, max_depth=2)
    assert "sub/deeper/c.txt" not in _walked(ws, max_depth=2)


def test_walk_from_an_ignored_directory_lists_its_content(ws: Workspace, root: Path) -> None:
    _tree(root, {".gitignore": "vendor/\n", "vendor/lib/x.py": ""})
    assert "vendor/" not in _walked(ws)
    assert _walked(ws, root / "vendor") == ["vendor/lib/", "vendor/lib/x.py"]


def test_walk_order_is_by_name_per_directory(ws: Workspace, root: Path) -> None:
    _tree(root, {"a-c.txt": "", "a/b.txt": ""})
    walked = _walked(ws)
    # Depth first with sorted names (ripgrep's order): "a/" and its content come before "a-c.txt"
    # because "a" < "a-c", even though the string "a-c.txt" < "a/b.txt".
    assert walked.index("a/b.txt") < walked.index("a-c.txt")


def test_ignore_rules_see_edits_in_a_fresh_instance(ws: Workspace, root: Path) -> None:
    assert "a.txt" in _walked(ws)
    (root / ".gitignore").write_text("a.txt\n")
    assert "a.txt" not in _walked(ws)
    os.remove(root / ".gitignore")
    assert "a.txt" in _walked(ws)
