"""The pull-request reviewer: one review (a summary and inline comments) per push.

Triggered by a ``pull_request`` event (opened, synchronize, ready_for_review)
or a ``{trigger} review`` comment on a pull request, by someone with write
access (the mention bot's rule). The review is ``clover-code review`` run as
a child without the job's credentials, in the sandbox the job chose, and it
never edits anything (read-only whatever the settings).

Nothing of the pull request runs on the runner. Its diff comes from the API
(``/pulls/N/files``), never from checking out its head: a pull request from
a fork, which gets no secrets under ``pull_request``, is reviewed under
``pull_request_target``, where the checkout is the base branch; its review
instructions are the base branch's, and the job refuses a checkout that
holds the fork's head. Each event reviews one kind: ``pull_request`` the
repository's own branches, ``pull_request_target`` forks (a workflow may
listen to both without reviewing twice); a comment reviews either.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from clover_code.errors import CloverError, ExitCode
from clover_code.git.safe import run_git
from clover_code.github.api import WRITE_PERMISSIONS, GitHubApi, GitHubApiError
from clover_code.github.event import PULL_REQUEST_EVENTS, GitHubRequest
from clover_code.github.git import Repo
from clover_code.github.leaks import SecretFound, find_secret
from clover_code.github.review_post import plan_review, posted_findings, pull_diff
from clover_code.github.task import task_env
from clover_code.review.findings import Finding

__all__ = ["ForkHeadCheckedOut", "ReviewOutcome", "review_pull", "run_review_child"]


class ForkHeadCheckedOut(CloverError):
    """The checkout holds a fork's pull request head (exit 1)."""


@dataclass(slots=True)
class ReviewOutcome:
    """How the review's child run ended."""

    exit_code: int
    result: dict[str, Any] = field(default_factory=dict)
    stderr: str = ""

    @property
    def findings(self) -> list[Finding]:
        """The findings of a finished review."""
        return [Finding.model_validate(f) for f in self.result.get("findings") or []]

    @property
    def error(self) -> str:
        """Why the review did not finish, in one sentence."""
        if self.result.get("type") != "result":
            return (
                f"the review's run ended without a result (exit code {self.exit_code}); "
                "the job's log has its error output."
            )
        return str(self.result.get("error") or f"the review failed (exit {self.exit_code}).")


def run_review_child(
    diff: str,
    known: list[Finding],
    root: Path,
    env: Mapping[str, str],
    *,
    sandbox: str,
    command: list[str] | None = None,
) -> ReviewOutcome:
    """Run ``clover-code review`` on ``diff`` in ``root`` with the environment ``env``
    (credentials already removed); the diff and the known findings are handed over
    in files outside the workspace."""
    argv = command or [sys.executable, "-P", "-m", "clover_code"]
    with tempfile.TemporaryDirectory(prefix="clover-review-") as scratch:
        diff_file, known_file = Path(scratch) / "pull.diff", Path(scratch) / "known.json"
        diff_file.write_text(diff, "utf-8")
        known_file.write_text(json.dumps([f.model_dump() for f in known]), "utf-8")
        done = subprocess.run(
            [
                *argv,
                "review",
                "--diff",
                str(diff_file),
                "--known",
                str(known_file),
                "--output-format",
                "json",
                "--sandbox",
                sandbox,
            ],
            cwd=root,
            env=dict(env),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            check=False,
        )
    try:
        result = json.loads(done.stdout.strip().splitlines()[-1]) if done.stdout.strip() else {}
    except json.JSONDecodeError:
        result = {}
    return ReviewOutcome(done.returncode, result if isinstance(result, dict) else {}, done.stderr)


def _holds(root: Path, commit: str) -> bool:
    """Whether the checkout's HEAD is ``commit`` or has it among its ancestors."""
    if not commit or not (root / ".git").exists():
        return False
    present = run_git("cat-file", "-e", f"{commit}^{{commit}}", cwd=root, check=False)
    if present.returncode != 0:
        return False
    ancestor = run_git("merge-base", "--is-ancestor", commit, "HEAD", cwd=root, check=False)
    return ancestor.returncode == 0


def _skip(log: TextIO, why: str) -> int:
    log.write(f"clover-code github: {why}; nothing to do.\n")
    return ExitCode.OK


def review_pull(
    request: GitHubRequest,
    api: GitHubApi,
    *,
    env: Mapping[str, str],
    token: str,
    workspace: Path,
    sandbox: str,
    trigger: str,
    limit: int,
    secrets: Mapping[str, str],
    log: TextIO,
) -> int:
    """Review pull request ``request.number`` and post the review; returns the exit code."""
    automatic = request.event in PULL_REQUEST_EVENTS
    permission = api.permission(request.author)
    if permission not in WRITE_PERMISSIONS:
        log.write(f"clover-code github: @{request.author} has {permission} access; refused.\n")
        if not automatic:
            api.create_comment(
                request.number,
                f"Sorry @{request.author}, only people with write access to this repository "
                f"can ask {trigger} for a review.",
            )
        return ExitCode.OK
    pull = api.pull(request.number)
    head = pull.get("head") or {}
    fork = (head.get("repo") or {}).get("full_name") != api.repository
    if pull.get("state", "open") != "open":
        return _skip(log, f"pull request #{request.number} is closed")
    if automatic and pull.get("draft"):
        return _skip(log, f"pull request #{request.number} is a draft")
    if request.event == "pull_request" and fork:
        return _skip(log, "a fork's pull request is reviewed under pull_request_target")
    if request.event == "pull_request_target" and not fork:
        return _skip(log, "this repository's own pull requests are reviewed under pull_request")
    head_sha = str(head.get("sha") or "")
    for key in Repo(workspace).drop_stored_credentials():
        log.write(f"clover-code github: removed {key} from the checkout's git config.\n")
    try:
        if fork and _holds(workspace, head_sha):
            raise ForkHeadCheckedOut(
                "the checkout holds the fork's pull request head; a fork's pull request is "
                "reviewed from its diff through the API, so check out the base branch "
                "(actions/checkout's default under pull_request_target), never the head."
            )
        return _review(
            request, api, pull, env, token, workspace, sandbox, trigger, limit, secrets, log
        )
    except CloverError as exc:
        log.write(f"clover-code github: {exc}\n")
        api.create_comment(request.number, f"The review of this pull request failed: {exc}")
        return int(exc.exit_code)


def _review(
    request: GitHubRequest,
    api: GitHubApi,
    pull: dict[str, Any],
    env: Mapping[str, str],
    token: str,
    workspace: Path,
    sandbox: str,
    trigger: str,
    limit: int,
    secrets: Mapping[str, str],
    log: TextIO,
) -> int:
    head_sha = str((pull.get("head") or {}).get("sha") or "")
    diff = pull_diff(api.pull_files(request.number))
    posted = posted_findings(api.review_comments(request.number), api.reviews(request.number))
    outcome = run_review_child(
        diff, posted.findings, workspace, task_env(env, token, workspace), sandbox=sandbox
    )
    log.write(f"clover-code github: the review ended with exit code {outcome.exit_code}.\n")
    if outcome.exit_code != 0 or outcome.result.get("status") != "success":
        log.write(outcome.stderr[-4000:])
        raise _ReviewFailed(outcome.error, outcome.exit_code)
    review = plan_review(
        outcome.findings,
        posted,
        diff,
        summary=str(outcome.result.get("summary") or ""),
        head=head_sha,
        limit=limit,
        trigger=trigger,
        repeated=int(outcome.result.get("repeated") or 0),
    )
    texts = [review.body, *(c["body"] for c in review.comments)]
    label = next((found for t in texts if (found := find_secret(t, secrets))), None)
    if label is not None:
        raise SecretFound(
            f"the review contains {label}; nothing was posted. "
            "Revoke the secret if it could have been seen."
        )
    try:
        api.create_review(
            request.number, commit_id=head_sha, body=review.body, comments=review.comments
        )
    except GitHubApiError as exc:
        # A line GitHub will not place a comment on: the findings go in the summary instead.
        log.write(f"clover-code github: inline comments refused ({exc}); posting them listed.\n")
        flat = plan_review(
            outcome.findings,
            posted,
            "",
            summary=str(outcome.result.get("summary") or ""),
            head=head_sha,
            limit=limit,
            trigger=trigger,
            repeated=int(outcome.result.get("repeated") or 0),
        )
        api.create_review(request.number, commit_id=head_sha, body=flat.body, comments=[])
    log.write(
        f"clover-code github: posted a review of #{request.number}: {len(review.inline)} inline "
        f"comments, {len(review.listed)} findings in the summary.\n"
    )
    return ExitCode.OK


class _ReviewFailed(CloverError):
    """The review's run failed; the job ends with the run's exit code."""

    def __init__(self, message: str, code: int) -> None:
        super().__init__(message)
        known = {int(c) for c in ExitCode}
        self.exit_code = ExitCode(code) if code in known else ExitCode.AGENT_ERROR
