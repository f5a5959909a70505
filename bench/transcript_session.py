"""One side of ``bench/transcript.py``, run inside the clover-code tree it measures
(``PYTHONPATH=TREE``, so the same file measures this tree and the baseline's):

    python bench/transcript_session.py write WORK
    python bench/transcript_session.py resume TRANSCRIPT WORK REPEATS [--copy]

``write`` runs a scripted session (a fake model: the answers are fixed, so both
trees record the same conversation; where a tree's committed blocks carry fill
confidences, the fake model gives them, one token per four characters) through
the session factory in ``WORK/repo`` and prints, as JSON, the transcript's bytes, the conversation's
bytes, the model requests (steps) and those whose calls may change
something, the turns, and the transcript's fsyncs during the turns (and the
seconds they took). ``resume`` times ``REPEATS`` reopenings of a transcript
the way the factory does it (``open_steps.transcript``: lock, read, load;
then close) and prints their CPU and wall seconds; with ``--copy`` each reopens
a fresh copy (a newer tree marks an older file's format when it reopens it).
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import clover_code
from clover_code.agent import open_steps
from clover_code.agent.steps import Steps
from clover_code.config.load import load_settings
from clover_code.config.settings import Settings
from clover_code.engine import events as ev
from tests.fakes import ScriptedBackend, text_response, tool_response
from tests.sessions import open_session

TURNS = 5
READS = 8
"""Files read per turn (each about 22 KB: the bulk of the conversation)."""
CHANGING = ("shell", "write_file", "edit_file")


def _settings(work: Path) -> Settings:
    values = {"sessions_dir": work / "sessions", "sandbox": "none", "max_turns": 200}
    values["context_window"] = 1_000_000  # the whole session fits: nothing is compacted
    return load_settings(values, user_config=work / "no-config.toml", env={})


def _module(n: int) -> str:
    lines = [f"def function_{n}_{i}(value):  # line {i} of module {n}" for i in range(200)]
    return "\n".join(f"{line}\n    return value + {i}" for i, line in enumerate(lines)) + "\n"


def _workspace(work: Path) -> Path:
    repo = work / "repo"
    repo.mkdir(parents=True)
    for n in range(TURNS * READS):
        (repo / f"module_{n}.py").write_text(_module(n))
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    return repo


def _script() -> list[list[Any]]:
    thought = "Looking at what the last result says before the next step. " * 5
    script: list[list[Any]] = []
    for turn in range(TURNS):
        for read in range(READS):
            path = f"module_{turn * READS + read}.py"
            script.append(tool_response(("read_file", {"path": path}), text=thought))
        script.append(tool_response(("shell", {"command": "seq 1 20000"})))  # cut for the model
        content = "".join(f"NOTE_{turn}_{i} = 'a line of the new file'\n" for i in range(100))
        script.append(
            tool_response(("write_file", {"path": f"notes_{turn}.py", "content": content}))
        )
        edit = {"path": f"notes_{turn}.py", "old_string": f"NOTE_{turn}_0 ", "new_string": "N "}
        script.append(tool_response(("edit_file", edit)))
        script.append(text_response("Done with this part. " * 20, reasoning=thought))
    return script


def _with_confidences(response: list[Any]) -> list[Any]:
    """The response's committed blocks with their tokens' fill confidences, where this
    tree's engine events carry them (a token per four characters, varied confidences)."""
    if "pieces" not in {f.name for f in dataclasses.fields(ev.BlockCommitted)}:
        return response
    from clover_code.protocol.confidence import TokenPiece

    out: list[Any] = []
    for event in response:
        if isinstance(event, ev.BlockCommitted):
            sizes = [min(4, len(event.text) - at) for at in range(0, len(event.text), 4)]
            pieces = [TokenPiece(n, 0.3 + 0.7 * ((k * 37) % 100) / 100, 1 + k % 3)
                      for k, n in enumerate(sizes)]  # fmt: skip
            event = dataclasses.replace(event, pieces=pieces)
        out.append(event)
    return out


async def write(work: Path) -> dict[str, Any]:
    """Record the scripted session; what it cost."""
    repo = _workspace(work)
    sessions = (work / "sessions").resolve()
    syncs: list[float] = []
    real_fsync = os.fsync

    def counted_fsync(fd: int) -> None:
        started = time.perf_counter()
        real_fsync(fd)
        path = Path(os.readlink(f"/proc/self/fd/{fd}"))
        if path.parent == sessions and path.suffix == ".jsonl":
            syncs.append(time.perf_counter() - started)

    os.fsync = counted_fsync  # the real fsync, counted (ours and the baseline's alike)
    backend = ScriptedBackend([_with_confidences(response) for response in _script()])
    session = await open_session(_settings(work), backend, repo, [], approval_mode="full-auto")
    opened = len(syncs)
    for turn in range(TURNS):
        finished = await session.run_turn(f"part {turn}: read the modules and write notes")
        assert finished.status == "completed", finished
    in_turns = syncs[opened:]
    conversation = json.dumps(session.agent.messages, ensure_ascii=False, separators=(",", ":"))
    await session.close()
    os.fsync = real_fsync
    path = session.transcript.path
    steps = len(backend.requests)
    return {
        "tree": str(Path(clover_code.__file__).parents[1]),
        "transcript": str(path),
        "transcript_bytes": path.stat().st_size,
        "conversation_bytes": len(conversation.encode()),
        "steps": steps,
        "changing_steps": TURNS * len(CHANGING),
        "turns": TURNS,
        "fsyncs": len(in_turns),
        "fsync_seconds": sum(in_turns),
    }


def resume(transcript: Path, work: Path, repeats: int, copy: bool) -> dict[str, Any]:
    """Time ``repeats`` reopenings of ``transcript`` as the session factory does them."""
    settings = _settings(work)
    cpu: list[float] = []
    wall: list[float] = []
    source = transcript
    for n in range(repeats):
        if copy:
            transcript = work / f"copy-{n}.jsonl"
            shutil.copyfile(source, transcript)
        opened = Steps()
        started, started_cpu = time.perf_counter(), time.process_time()
        record = open_steps.transcript(settings, work, "fake-model", transcript, opened)
        cpu.append(time.process_time() - started_cpu)
        wall.append(time.perf_counter() - started)
        assert record.messages, "the session came back empty"
        record.transcript.close()
    return {"tree": str(Path(clover_code.__file__).parents[1]), "cpu": cpu, "wall": wall}


def main(argv: list[str]) -> None:
    """Run the command in ``argv`` and print its JSON."""
    if argv[0] == "write":
        result = asyncio.run(write(Path(argv[1])))
    else:
        result = resume(Path(argv[1]), Path(argv[2]), int(argv[3]), "--copy" in argv)
    print(json.dumps(result))


if __name__ == "__main__":
    main(sys.argv[1:])
