"""One ``clover-code github`` run: from the event to a pull request, a push or an answer."""

from __future__ import annotations

import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

from clover_code.errors import CloverError, ExitCode, UsageError
from clover_code.github.api import DEFAULT_API_URL, WRITE_PERMISSIONS, GitHubApi
from clover_code.github.event import GitHubRequest, read_event
from clover_code.github.git import GitError, Repo, branch_slug, push_env
from clover_code.github.leaks import SecretFound, find_secret
from clover_code.github.review import review_pull
from clover_code.github.task import (
    TaskOutcome,
    Throttle,
    build_prompt,
    run_headless,
    task_env,
)
from clover_code.redact import redacting

__all__ = ["GitHubJob", "job_from_env", "run_job"]

_MAX_STEPS = 15


@dataclass(frozen=True, slots=True)
class GitHubJob:
    """What the Actions job gives: the event, the repository, the token, the checkout."""

    event_path: Path
    event_name: str | None
    repository: str
    token: str
    api_url: str
    server_url: str
    workspace: Path
    trigger: str
    sandbox: str = "auto"
    """Where the agent's shell runs (``--sandbox`` of the headless child)."""
    secrets: Mapping[str, str] = field(default_factory=dict)
    """Every secret the job holds, by what to call it: nothing pushed or posted has one."""
    progress_interval: float = 10.0
    max_review_comments: int = 20
    """Most inline comments one pull-request review posts."""


def job_from_env(
    env: Mapping[str, str],
    trigger: str,
    workspace: Path | None = None,
    *,
    sandbox: str = "auto",
    secrets: Mapping[str, str] | None = None,
    max_review_comments: int = 20,
) -> GitHubJob:
    """The job described by the Actions variables in ``env``; UsageError names what is missing."""
    missing = [name for name in ("GITHUB_EVENT_PATH", "GITHUB_REPOSITORY") if not env.get(name)]
    token = env.get("GITHUB_TOKEN") or env.get("GH_TOKEN") or ""
    if not token:
        missing.append("GITHUB_TOKEN")
    if missing:
        raise UsageError(
            f"{', '.join(missing)} not set; run clover-code github in a GitHub Actions job "
            "(pass the token as env GITHUB_TOKEN: ${{ secrets.GITHUB_TOKEN }})."
        )
    return GitHubJob(
        event_path=Path(env["GITHUB_EVENT_PATH"]),
        event_name=env.get("GITHUB_EVENT_NAME") or None,
        repository=env["GITHUB_REPOSITORY"],
        token=token,
        api_url=env.get("GITHUB_API_URL") or DEFAULT_API_URL,
        server_url=env.get("GITHUB_SERVER_URL") or "https://github.com",
        workspace=workspace or Path(env.get("GITHUB_WORKSPACE") or ".").resolve(),
        trigger=trigger,
        sandbox=sandbox,
        secrets=dict(secrets or {}),
        max_review_comments=max_review_comments,
    )


class _Progress:
    """The one progress comment, rewritten as the run goes."""

    def __init__(self, api: GitHubApi, number: int, header: str) -> None:
        self.api, self.header = api, header
        self.steps: list[str] = []
        self.comment_id = api.create_comment(number, self._body("Working on it…"))

    def _body(self, status: str) -> str:
        lines = [self.header, "", status]
        if self.steps:
            shown = self.steps[-_MAX_STEPS:]
            lines += ["", "<details><summary>Steps</summary>", ""]
            lines += [f"- `{step[:120]}`" for step in shown]
            lines += ["", "</details>"]
        return "\n".join(lines)

    def update(self, status: str) -> None:
        self.api.update_comment(self.comment_id, self._body(status))


def run_job(job: GitHubJob, env: Mapping[str, str], log: TextIO | None = None) -> int:
    """Act on the job's event; returns the exit code (0 also when there was nothing to do)."""
    log = redacting(log or sys.stderr)
    request = read_event(job.event_path, job.event_name)
    if request is None:
        log.write(
            "clover-code github: this event is not a new issue, comment or pull request "
            "push; nothing to do.\n"
        )
        return ExitCode.OK
    review = request.asks_review(job.trigger)
    if not review and not request.mentions(job.trigger):
        log.write(f"clover-code github: no {job.trigger} in the text; nothing to do.\n")
        return ExitCode.OK
    api = GitHubApi(job.api_url, job.repository, job.token)
    try:
        if review:
            return review_pull(
                request,
                api,
                env=env,
                token=job.token,
                workspace=job.workspace,
                sandbox=job.sandbox,
                trigger=job.trigger,
                limit=job.max_review_comments,
                secrets=job.secrets,
                log=log,
            )
        return _answer(job, env, request, api, log)
    finally:
        api.close()


def _answer(
    job: GitHubJob, env: Mapping[str, str], request: GitHubRequest, api: GitHubApi, log: TextIO
) -> int:
    permission = api.permission(request.author)
    if permission not in WRITE_PERMISSIONS:
        api.create_comment(
            request.number,
            f"Sorry @{request.author}, only people with write access to this repository can "
            f"ask {job.trigger} for changes.",
        )
        log.write(f"clover-code github: @{request.author} has {permission} access; refused.\n")
        return ExitCode.OK
    progress = _Progress(api, request.number, f"**{job.trigger}** is on it (@{request.author}).")
    try:
        return _work(job, env, request, api, progress, log)
    except CloverError as exc:
        progress.update(f"Stopped: {exc}")
        log.write(f"clover-code github: {exc}\n")
        return int(exc.exit_code)


def _work(
    job: GitHubJob,
    env: Mapping[str, str],
    request: GitHubRequest,
    api: GitHubApi,
    progress: _Progress,
    log: TextIO,
) -> int:
    repo = Repo(job.workspace, push_env(job.token, job.server_url, env))
    for key in repo.drop_stored_credentials():
        log.write(f"clover-code github: removed {key} from the checkout's git config.\n")
    if request.kind == "pull_request":
        pull = api.pull(request.number)
        head = pull["head"]
        if (head.get("repo") or {}).get("full_name") != job.repository:
            progress.update("This pull request's branch lives in a fork; I cannot push to it.")
            return ExitCode.OK
        branch, base = str(head["ref"]), str(pull["base"]["ref"])
        default = request.default_branch or (pull["base"].get("repo") or {}).get("default_branch")
        protected = {base, str(default or "")}
        repo.checkout_remote_branch(branch)
        new_pull = branch in protected
        if new_pull:
            # Never push to the default branch: the change gets a branch and a PR of its own.
            base, branch = branch, f"clover/pr-{request.number}-{branch_slug(request.title)}"
            repo.new_branch(branch)
    else:
        base = request.default_branch or repo.current_branch() or "main"
        protected = {base}
        branch = f"clover/issue-{request.number}-{branch_slug(request.title)}"
        repo.new_branch(branch)
        new_pull = True
    start = repo.head()
    throttle = Throttle(job.progress_interval)

    def on_step(step: str) -> None:
        progress.steps.append(step)
        if throttle.ready():
            progress.update(f"Working on it… ({len(progress.steps)} steps so far)")

    outcome = run_headless(
        build_prompt(request, job.trigger),
        job.workspace,
        task_env(env, job.token, job.workspace),
        on_step=on_step,
        sandbox=job.sandbox,
    )
    log.write(f"clover-code github: the task ended with exit code {outcome.exit_code}.\n")
    changed = repo.dirty() or repo.head() != start
    if not outcome.finished:
        # A crashed run: its changes are unreviewed and its output is no summary.
        log.write(outcome.stderr)
        progress.update(f"The task failed: {outcome.text}")
        return outcome.exit_code or ExitCode.AGENT_ERROR
    _check_text(outcome.text, job.secrets)
    if not outcome.ok and not changed:
        progress.update(f"The task failed: {outcome.text}")
        return outcome.exit_code
    if not changed:
        progress.update(outcome.text or "Done; nothing needed changing.")
        return ExitCode.OK
    if branch in protected:
        raise GitError(f"refusing to push to `{branch}`, the branch pull requests go into.")
    return _publish(
        request, api, progress, repo, outcome, Target(branch, base, start, new_pull), job.secrets
    )


@dataclass(frozen=True, slots=True)
class Target:
    """Where the change goes: ``branch`` (pushed), ``base`` (a new PR's), from ``start``."""

    branch: str
    base: str
    start: str
    new_pull: bool


def _check_text(text: str, secrets: Mapping[str, str]) -> None:
    label = find_secret(text, secrets)
    if label is not None:
        raise SecretFound(
            f"the agent's answer contains {label}; nothing was pushed or posted. "
            "Revoke the secret if it could have been seen."
        )


def _check_changes(repo: Repo, start: str, message: str, secrets: Mapping[str, str]) -> None:
    """Raise SecretFound, naming the file or commit, if a secret is in what would be pushed."""
    for path in repo.changed_since(start):
        label = find_secret(path, secrets) or find_secret(repo.staged_bytes(path), secrets)
        if label is not None:
            raise SecretFound(
                f"the change to {path} contains {label}; nothing was pushed or posted. "
                "Revoke the secret if it could have been seen."
            )
    label = find_secret(repo.messages_since(start) + message, secrets)
    if label is not None:
        raise SecretFound(f"a commit message contains {label}; nothing was pushed or posted.")


def _publish(
    request: GitHubRequest,
    api: GitHubApi,
    progress: _Progress,
    repo: Repo,
    outcome: TaskOutcome,
    target: Target,
    secrets: Mapping[str, str],
) -> int:
    summary = outcome.text or "(no summary)"
    note = "" if outcome.ok else f"\n\nThe task did not finish cleanly: {outcome.text}"
    branch, base = target.branch, target.base
    subject = f"{request.title or 'Changes'} (#{request.number})"
    subject = subject if len(subject) <= 72 else subject[:71] + "…"
    message = f"{subject}\n\nRequested by @{request.author}."
    repo.stage_all()
    _check_changes(repo, target.start, message, secrets)
    if repo.dirty():
        repo.commit_staged(message)
    progress.update(f"Pushing to `{branch}`…")
    repo.push(branch)
    commit = repo.head()[:12]
    if not target.new_pull:
        progress.update(f"Pushed {commit} to `{branch}`.\n\n{summary}{note}")
        return ExitCode.OK if outcome.ok else outcome.exit_code
    closes = f"Closes #{request.number}." if request.kind == "issue" else f"For #{request.number}."
    pull = api.create_pull(
        title=request.title or f"Changes for #{request.number}",
        head=branch,
        base=base,
        body=f"{closes}\n\n{summary}{note}",
    )
    link = pull.get("html_url") or f"#{pull.get('number')}"
    progress.update(f"Opened {link} from `{branch}`.\n\n{summary}{note}")
    return ExitCode.OK if outcome.ok else outcome.exit_code
