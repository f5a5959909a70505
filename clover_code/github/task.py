"""The headless run for one request, in an environment without the GitHub token.

The agent runs as a child ``clover-code --task ... --output-format stream-json``
whose environment has the token and every Actions credential removed
(``credentials.without_credentials``), in the sandbox the job chose.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from clover_code.github.credentials import without_credentials
from clover_code.github.event import GitHubRequest

__all__ = ["TaskOutcome", "build_prompt", "run_headless", "task_env"]


def task_env(env: Mapping[str, str], token: str, root: Path) -> dict[str, str]:
    """The task's environment: ``without_credentials``, with the approval mode ``auto-edit``
    (or the most an administrator allows, if less) unless the environment or a config
    file names one (headless alone defaults to ``sandbox-auto``; a job on GitHub keeps
    its own default)."""
    from clover_code.config.load import load_settings

    child = without_credentials(env, token)
    settings = load_settings({}, repo_root=root, env=child)
    if settings.approval is None:
        child["CLOVER_APPROVAL"] = settings.approval_or("auto-edit")
    return child


def build_prompt(request: GitHubRequest, trigger: str) -> str:
    """The task text: where the request came from, the thread's description, and the ask."""
    where = "pull request" if request.kind == "pull_request" else "issue"
    lines = [f"You were asked for help on GitHub {where} #{request.number}: {request.title}"]
    if request.issue_body.strip() and request.event != "issues":
        lines += ["", f"The {where}'s description:", request.issue_body.strip()]
    if request.review_path:
        at = f" at line {request.review_line}" if request.review_line else ""
        lines += ["", f"The comment is on the file {request.review_path}{at}."]
    lines += ["", f"The request from @{request.author}:", request.body.strip()]
    lines += [
        "",
        f"(The mention {trigger} is how they called you.) Make the changes in this checkout "
        "if the request asks for changes; do not commit, push or open pull requests: that is "
        "done for you afterwards. End with a short summary for the comment thread.",
    ]
    return "\n".join(lines)


@dataclass(slots=True)
class TaskOutcome:
    """How the headless run ended."""

    exit_code: int
    result: dict[str, Any] = field(default_factory=dict)
    stderr: str = ""

    @property
    def ok(self) -> bool:
        """Whether the task completed."""
        return self.exit_code == 0

    @property
    def finished(self) -> bool:
        """Whether the run printed its result object (a run that did not crashed)."""
        return self.result.get("type") == "result"

    @property
    def text(self) -> str:
        """The final answer, or the reason it failed (never the run's stderr: a
        traceback there is no summary, and may quote anything the run saw)."""
        if not self.finished:
            return (
                f"the agent's run ended without a result (exit code {self.exit_code}); "
                "the job's log has its error output."
            )
        if self.ok:
            return str(self.result.get("result") or "").strip()
        return str(self.result.get("error") or f"the run failed with exit code {self.exit_code}.")


def run_headless(
    prompt: str,
    root: Path,
    env: Mapping[str, str],
    *,
    on_step: Callable[[str], None],
    sandbox: str,
    command: list[str] | None = None,
) -> TaskOutcome:
    """Run ``prompt`` headless in ``root`` with ``--sandbox sandbox``; ``on_step`` hears
    each tool call's summary."""
    argv = command or [sys.executable, "-P", "-m", "clover_code"]
    result: dict[str, Any] = {}
    # stderr goes to a file: a pipe nobody reads while stdout streams could fill and stall.
    with tempfile.TemporaryFile("w+", encoding="utf-8") as errors:
        proc = subprocess.Popen(
            [*argv, "--task", prompt, "--output-format", "stream-json", "--sandbox", sandbox],
            cwd=root,
            env=dict(env),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=errors,
            text=True,
        )
        assert proc.stdout is not None
        with proc.stdout:
            for line in proc.stdout:
                data = _json_line(line)
                if data.get("type") == "result":
                    result = data
                elif data.get("type") == "tool_call_started":
                    on_step(f"{data.get('name', 'tool')} {data.get('summary', '')}".strip())
        code = proc.wait()
        errors.seek(0)
        stderr = errors.read()
    return TaskOutcome(exit_code=code, result=result, stderr=stderr[-4000:])


def _json_line(line: str) -> dict[str, Any]:
    try:
        data = json.loads(line)
    except json.JSONDecodeError:
        return {}
    return data if isinstance(data, dict) else {}


class Throttle:
    """Lets a call through at most once per ``interval`` seconds."""

    def __init__(self, interval: float) -> None:
        self.interval = interval
        self._last = float("-inf")

    def ready(self) -> bool:
        """Whether enough time has passed since the last call let through."""
        now = time.monotonic()
        if now - self._last < self.interval:
            return False
        self._last = now
        return True
