"""Sessions for the crash tests, each run in a process of its own:

    python -m tests.integration.crash_session BASE [--power] [--log] N...

For each N, a child process forked from this one (which has the modules
loaded already, so a run costs only the session) opens a session through the
factory in ``BASE/N/repo`` (transcripts in ``BASE/N/sessions``, commands on
the host, nothing asked) on a scripted model (a fake: the answers are fixed,
so every run passes the same points) and runs two turns: the first reads
``calc.py``, edits it, runs a command that creates ``made.txt`` and answers;
the second only answers. The child is armed to SIGKILL itself at point N
(``transcript_crash``; 0: never), cutting the transcript back to its last
fsync first with ``--power``; ``--log`` writes the points it passes to
``BASE/N/points.jsonl``. One line per run is printed: N and how the child
ended (its exit code, or minus the signal that killed it).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
from pathlib import Path

from clover_code import protocol as p
from clover_code.agent import transcript_crash
from clover_code.config.load import load_settings
from clover_code.config.settings import Settings
from tests.fakes import ScriptedBackend, text_response, tool_response
from tests.sessions import open_session

CALC = "def add(a, b):\n    return a - b\n"
FIXED = "def add(a, b):\n    return a + b\n"
PROMPTS = ("fix add", "thanks")


def settings(work: Path) -> Settings:
    """The settings of a crash session (and of its resumption)."""
    values = {"sessions_dir": work / "sessions", "sandbox": "none"}
    return load_settings(values, user_config=work / "no-config.toml", env={})


def script() -> list[list[object]]:
    """The model's answers: a read, an edit, a command, an answer; then an answer."""
    edit = {"path": "calc.py", "old_string": "a - b", "new_string": "a + b"}
    return [
        tool_response(("read_file", {"path": "calc.py"}), text="Let me look."),
        tool_response(("edit_file", edit)),
        tool_response(("shell", {"command": "touch made.txt"})),
        text_response("Fixed.", reasoning="It subtracted."),
        text_response("You're welcome."),
    ]


def prepare(work: Path) -> None:
    """A fresh workspace in ``work/repo`` (a git repository holding ``calc.py``)."""
    repo = work / "repo"
    repo.mkdir(parents=True)
    (repo / "calc.py").write_text(CALC)
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)


async def run(work: Path) -> None:
    """Run the two turns and close the session."""
    events: list[p.Event] = []
    backend = ScriptedBackend(script())
    repo = work / "repo"
    session = await open_session(settings(work), backend, repo, events, approval_mode="full-auto")
    for prompt in PROMPTS:
        await session.run_turn(prompt)
    await session.close()


def _child(work: Path, point: int, power: bool, log: bool) -> None:
    plan = transcript_crash.CrashPlan(
        at=point or None, power=power, log=work / "points.jsonl" if log else None
    )
    transcript_crash.arm(plan)
    os.environ["XDG_DATA_HOME"] = str(work / "data")
    os.environ["XDG_CONFIG_HOME"] = str(work / "config")
    asyncio.run(run(work))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("base", type=Path)
    parser.add_argument("points", type=int, nargs="+")
    parser.add_argument("--power", action="store_true")
    parser.add_argument("--log", action="store_true")
    args = parser.parse_args()
    for point in args.points:
        work = args.base / str(point)
        prepare(work)
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                _child(work, point, args.power, args.log)
                code = 0
            finally:
                os._exit(code)
        _, status = os.waitpid(pid, 0)
        print(point, os.waitstatus_to_exitcode(status), flush=True)


if __name__ == "__main__":
    main()
