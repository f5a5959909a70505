"""``clover-code review``: a review run headless, printed as text, JSON or SARIF.

The review is a headless task (``run.run_task``: its limits, signals, exit
codes and result object) whose prompt is the review task, whose approval mode
is ``read-only`` whatever the settings say, and whose answer is checked by
the findings schema with ``--output-schema``'s retries. Its event stream is
read here: tool calls and notices go to stderr as the run goes (text), and
the closing result becomes a ``ReviewResult`` with the findings.
"""

from __future__ import annotations

import io
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Literal, TextIO, cast

from clover_code import __version__
from clover_code.config.settings import Settings
from clover_code.errors import CloverError, ExitCode, UsageError
from clover_code.fs.workspace_root import find_root
from clover_code.headless.ending import report_error
from clover_code.headless.record import RunRecord
from clover_code.headless.render import TextRenderer
from clover_code.headless.run import run_task
from clover_code.outcome.output_schema import MAX_RETRIES
from clover_code.outcome.result import TaskResult, parse_stream_line
from clover_code.redact import redacting
from clover_code.review.diff import DiffTarget, ReviewDiff, select_diff
from clover_code.review.findings import Finding, ReviewAnswer, by_severity
from clover_code.review.instructions import review_instructions
from clover_code.review.prompt import review_prompt, review_schema
from clover_code.review.render import ReviewResult, findings_text, sarif_log
from clover_code.review.session import review_settings

__all__ = ["ReviewFormat", "load_known", "run_review_task"]

ReviewFormat = Literal["text", "json", "sarif"]


class _Lines(io.TextIOBase):
    """A text stream that hands each whole line written to it to ``on_line``."""

    def __init__(self, on_line: Callable[[str], None]) -> None:
        super().__init__()
        self._on_line = on_line
        self._partial = ""

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        lines = (self._partial + text).split("\n")
        self._partial = lines.pop()
        for line in lines:
            if line.strip():
                self._on_line(line)
        return len(text)


class _Stream:
    """Reads the task's stream-json: progress to stderr (text), the result kept."""

    def __init__(self, progress: TextRenderer | None) -> None:
        self.progress = progress
        self.result: TaskResult | None = None

    def __call__(self, line: str) -> None:
        item = parse_stream_line(line)
        if isinstance(item, TaskResult):
            self.result = item
        elif self.progress is not None:
            self.progress(item)


def load_known(path: Path) -> list[Finding]:
    """The findings in a JSON list at ``path`` (reported before); ``UsageError`` when unusable."""
    from pydantic import TypeAdapter, ValidationError

    try:
        data = json.loads(path.read_text("utf-8"))
        return TypeAdapter(list[Finding]).validate_python(data)
    except FileNotFoundError:
        raise UsageError(f"known-findings file {path} does not exist.") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise UsageError(f"known-findings file {path} cannot be read as JSON ({exc}).") from None
    except ValidationError as exc:
        first = exc.errors()[0]
        where = "/".join(str(part) for part in first["loc"])
        raise UsageError(
            f"known-findings file {path} is not a list of findings (at {where}: {first['msg']})."
        ) from None


async def run_review_task(
    settings: Settings,
    cwd: Path,
    target: DiffTarget,
    *,
    output_format: ReviewFormat = "text",
    out: TextIO | None = None,
    err: TextIO | None = None,
    started: float | None = None,
    known: list[Finding] | None = None,
    default_branch: Callable[[], str | None] | None = None,
    own_process: bool = False,
) -> int:
    """Review the diff ``target`` names and print the outcome; returns the exit code.

    ``known``: findings reported before (a pull request's earlier review); the
    model is told them and any it reports again are left out.
    """
    out = redacting(out or sys.stdout)
    err = redacting(err or sys.stderr)
    started = time.monotonic() if started is None else started
    root, _ = find_root(cwd)
    try:
        diff = select_diff(root, target, default_branch=default_branch)
    except CloverError as exc:
        return _print(_failed(exc, err, started), output_format, out, err, root)
    if diff.empty:
        nothing = RunRecord().result(
            status="success",
            exit_code=int(ExitCode.OK),
            error=None,
            version=__version__,
            duration_s=round(time.monotonic() - started, 3),
        )
        summary = f"Nothing to review: no changes in {diff.what}."
        return _print(_review(nothing, diff, summary, []), output_format, out, err, root)
    schema = review_schema(root, diff)
    stream = _Stream(TextRenderer(io.StringIO(), err) if output_format == "text" else None)
    await run_task(
        review_settings(settings),
        review_prompt(diff, review_instructions(root), known),
        cwd,
        output_format="stream-json",
        out=cast(TextIO, _Lines(stream)),
        err=err,
        started=started,
        output_schema=schema,
        own_process=own_process,
    )
    if stream.result is None:  # run_task always prints one; a bug if not
        raise AssertionError("the review's run printed no result")
    return _print(_from_run(stream.result, diff, known or []), output_format, out, err, root)


def _failed(error: CloverError, err: TextIO, started: float) -> ReviewResult:
    """The result of a review that could not start (``error`` said on stderr too)."""
    written = io.StringIO()
    report_error(error, "json", written, err, started=started)
    return ReviewResult.model_validate({**json.loads(written.getvalue())})


def _review(
    result: TaskResult,
    diff: ReviewDiff,
    summary: str,
    findings: list[Finding],
    repeated: int = 0,
) -> ReviewResult:
    return ReviewResult.model_validate(
        {
            **result.model_dump(),
            "reviewed": diff.what,
            "summary": summary,
            "findings": [f.model_dump() for f in findings],
            "repeated": repeated,
        }
    )


def _from_run(result: TaskResult, diff: ReviewDiff, known: list[Finding]) -> ReviewResult:
    """The review's result from the task's: its answer read as findings, known ones left out."""
    if result.exit_reason == "output_schema":
        problem = (result.error or "").partition("): ")[2].rstrip(".")
        error = (
            f"the review's answer never matched the findings schema (after {MAX_RETRIES} "
            f"retries): {problem}."
        )
        result = result.model_copy(update={"error": error})
    if result.structured_output is None:
        return _review(result.model_copy(update={"structured_output": None}), diff, "", [])
    answer = ReviewAnswer.model_validate(result.structured_output)
    seen = {f.fingerprint() for f in known}
    found = by_severity(list(answer.findings))
    findings = [f for f in found if f.fingerprint() not in seen]
    # The answer is in the findings and summary; the raw value is not repeated.
    plain = result.model_copy(update={"structured_output": None, "result": answer.summary})
    return _review(plain, diff, answer.summary, findings, len(found) - len(findings))


def _print(
    result: ReviewResult, output_format: ReviewFormat, out: TextIO, err: TextIO, root: Path
) -> int:
    if output_format == "json":
        out.write(result.model_dump_json() + "\n")
    elif output_format == "sarif":
        out.write(json.dumps(sarif_log(result, root), indent=2) + "\n")
    elif result.status == "success":
        out.write(findings_text(result))
    elif result.error and result.session_id is not None:  # else said by report_error
        err.write(f"clover-code review: the review did not finish: {result.error}\n")
    out.flush()
    err.flush()
    return result.exit_code
