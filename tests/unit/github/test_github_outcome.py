"""What the GitHub bot makes of a headless run that crashed instead of printing its result.

The run is a real child process (``run_headless`` with another command): one
that dies with a traceback must not have that traceback (or any stderr line)
become the comment or the pull request's summary.
"""

from __future__ import annotations

import sys
from pathlib import Path

from clover_code.github.task import run_headless

CRASH = (
    "import sys\n"
    'print(\'{"type": "tool_call_started", "name": "shell", "summary": "ls"}\')\n'
    "sys.stdout.flush()\n"
    "raise RuntimeError('surrogates not allowed')\n"
)


def test_a_run_without_a_result_is_not_summarised_by_its_traceback(tmp_path: Path) -> None:
    steps: list[str] = []
    outcome = run_headless(
        "do it",
        tmp_path,
        {"PATH": "/usr/bin:/bin"},
        on_step=steps.append,
        sandbox="bwrap",
        command=[sys.executable, "-c", CRASH],
    )
    assert steps == ["shell ls"]
    assert outcome.exit_code == 1 and not outcome.finished
    assert "Traceback" in outcome.stderr
    assert outcome.text == (
        "the agent's run ended without a result (exit code 1); the job's log has its error output."
    )


def test_a_failed_run_with_a_result_gives_its_error(tmp_path: Path) -> None:
    line = '{"type": "result", "status": "error", "error": "no engine.", "result": ""}'
    script = f"import sys\nprint({line!r})\nsys.stderr.write('Traceback: x\\n')\nsys.exit(3)\n"
    outcome = run_headless(
        "do it",
        tmp_path,
        {"PATH": "/usr/bin:/bin"},
        on_step=lambda _: None,
        sandbox="bwrap",
        command=[sys.executable, "-c", script],
    )
    assert outcome.finished and outcome.exit_code == 3
    assert outcome.text == "no engine."
