"""The batch's progress: counts, rate and ETA; a bar redrawn in place on a terminal,
one line per finished task in a log."""

from __future__ import annotations

import io

from clover_code.batch.progress import Progress, clock, status_line
from clover_code.batch.runner import BatchRecord


def record(id: str, outcome: str = "completed", tests: bool | None = None) -> BatchRecord:
    return BatchRecord.model_validate(
        {
            "id": id,
            "outcome": outcome,
            "tests_passed": tests,
            "duration_s": 65.0,
            "error": None,
            "transcript": f"transcripts/{id}.jsonl",
            "result": None,
        }
    )


def test_clock_reads_like_a_person_would_say_it() -> None:
    assert [clock(s) for s in (0, 42.4, 187, 7500)] == ["0s", "42s", "3m 07s", "2h 05m"]


def test_the_line_has_counts_rate_and_eta() -> None:
    line = status_line(3, 8, 2, 1, 90.0, bar=True)
    assert line == (
        "[#########---------------] 3/8 · 2 running · 1 not completed · "
        "2.0 tasks/min · 1m 30s elapsed · ETA 2m 30s"
    )
    assert status_line(0, 8, 4, 0, 5.0, bar=False) == "0/8 · 4 running · 5s elapsed"
    assert "ETA" not in status_line(8, 8, 0, 0, 60.0, bar=False)


def test_in_a_log_each_finished_task_is_one_line() -> None:
    err = io.StringIO()
    progress = Progress(3, 2, err, tty=False)
    progress(record("a", tests=True))
    progress(record("b", "failed"))
    progress.draw()  # no bar in a log
    out = err.getvalue().splitlines()
    assert out[0].startswith("[1/3] a: completed, tests passed (1m 05s) | 1/3 · 2 running")
    assert out[1].startswith("[2/3] b: failed (1m 05s) | 2/3 · 1 running · 1 not completed")
    assert len(out) == 2 and "\r" not in err.getvalue()


def test_on_a_terminal_the_bar_is_redrawn_under_each_finished_task() -> None:
    err = io.StringIO()
    progress = Progress(2, 1, err, tty=True)
    progress.draw()
    progress(record("a", tests=False))
    progress.finish()
    text = err.getvalue()
    first, rest = text.split("a: completed, tests failed (1m 05s)\n")
    assert first.startswith("\r\x1b[2K[------------------------] 0/2 · 1 running")
    assert first.endswith("\r\x1b[2K")  # the bar is cleared before the task's line
    assert rest.startswith("\r\x1b[2K[############------------] 1/2 · 1 running")
    assert rest.endswith("\n")
    assert progress.done == 1 and progress.outcomes["completed"] == 1
