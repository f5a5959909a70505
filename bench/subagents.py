"""Subagent benchmark: child agents in parallel, in the background and in worktrees.

A loopback scripted server (the integration tests' ``ScriptedServer``) answers
every chat request after a fixed latency (default 0.5 s, standing in for the
model's time per response). The task needs N independent file investigations
(default 4), each two dependent steps (read the file, then grep for the name
it mentions) and an answer. A real session (``Session.open``, the real
``OpenAIBackend``, real tools on a temporary repository) runs it three ways:

* subagents: one response with N ``task`` calls; each child reads, greps and
  answers; the parent answers (the children's requests overlap);
* sequential in one context (the named peer): read, grep, read, grep, ...
  one request per step, then the answer;
* batched in one context (for information): all N reads in one response, all
  N greps in the next, then the answer (what a model that plans the whole
  task up front could do).

Background children (``task`` with ``background``): the parent starts the N
investigations in the background and meanwhile reads N files of its own, one
request each, then answers once the children's reports are in (a turn that
waits for them, as headless does). Peer: the same children in the foreground
(the parent waits for them, then does its own reads): 3 + N + 2 requests on
the critical path against N + 2.

Worktree children (``isolation: worktree``): N children each edit a different
file, in a worktree of their own, merged back when they end. Peer: the same
children editing the shared workspace. The ratio is the cost of isolation
(making a worktree from the workspace's state, merging it back), and every
edit is checked to be in the workspace afterwards.

    python bench/subagents.py [--files 4] [--latency 0.5]

Prints the wall time of each and the ratios, and exits 1 when background
children are not at least ``BACKGROUND_TARGET`` times faster than foreground
ones (the critical paths are N + 5 and N + 2 requests: 1.5x at N = 4). The
first ratio has no target (it follows from the request counts, which the run
confirms end to end); the third is the overhead of isolation on this machine.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(_ROOT))

from clover_code import protocol as p  # noqa: E402
from clover_code.agent.open import SessionOptions, open_session  # noqa: E402
from clover_code.agent.permissions.approval import RefuseApprover  # noqa: E402
from clover_code.config.load import load_settings  # noqa: E402
from clover_code.engine.remote.backend import OpenAIBackend  # noqa: E402
from tests.integration.sse_server import (  # noqa: E402
    MODELS_PATH,
    Pause,
    RecordedRequest,
    ScriptedResponse,
    ScriptedServer,
    json_response,
    sse_response,
)
from tests.integration.stream_shapes import SGLangStream  # noqa: E402

Call = tuple[str, dict[str, Any]]

BACKGROUND_TARGET = 1.15
"""Background children must beat foreground ones by this factor (the floor ratio is 1.5)."""


def _response(latency: float, calls: list[Call], text: str = "") -> ScriptedResponse:
    stream = SGLangStream()
    for name, arguments in calls:
        stream.tool_call(name, arguments)
    if text:
        stream.content(text)
    response = sse_response(stream.chunks())
    assert response.steps is not None
    response.steps.insert(0, Pause(latency))
    return response


def _read(i: int) -> Call:
    return "read_file", {"path": f"mod{i}.py"}


def _grep(i: int) -> Call:
    return "grep", {"pattern": f"helper_{i}"}


def _task(i: int, **more: Any) -> Call:
    prompt = f"INVESTIGATE mod{i}.py: read it, find where its helper is used, answer."
    return "task", {"description": f"investigate mod{i}", "prompt": prompt, **more}


def _edit_task(i: int, isolation: str) -> Call:
    prompt = f"EDIT use{i}.py: make helper_{i} return twice the number."
    args = {"description": f"edit use{i}", "prompt": prompt, "agent": "general"}
    return "task", {**args, "isolation": isolation}


def _own_read(i: int) -> Call:
    return "read_file", {"path": f"use{i}.py"}


def _edit_steps(i: int) -> list[list[Call]]:
    edit = {"path": f"use{i}.py", "old_string": f"return {i}", "new_string": f"return {2 * i}"}
    return [[("edit_file", edit)]]


def _parent_plan(mode: str, files: int) -> list[list[Call]]:
    """The parent's tool calls, response by response, before its answer."""
    if mode == "subagents":
        return [[_task(i) for i in range(files)]]
    if mode == "sequential":
        return [[step(i)] for i in range(files) for step in (_read, _grep)]
    if mode == "batched":
        return [[_read(i) for i in range(files)], [_grep(i) for i in range(files)]]
    if mode == "background":
        return [[_task(i, background=True) for i in range(files)]] + [
            [_own_read(i)] for i in range(files)
        ]
    if mode == "foreground":
        return [[_task(i) for i in range(files)]] + [[_own_read(i)] for i in range(files)]
    return [[_edit_task(i, mode) for i in range(files)]]  # "worktree" or "shared"


def _responder(mode: str, files: int, latency: float) -> Callable[[RecordedRequest], Any]:
    def respond(request: RecordedRequest) -> ScriptedResponse:
        if request.path == MODELS_PATH:
            return json_response({"object": "list", "data": [{"id": "test-model"}]})
        messages = request.json()["messages"]
        done = sum(1 for m in messages if m["role"] == "tool")
        first = next(m["content"] for m in messages if m["role"] == "user")
        if first.startswith("INVESTIGATE mod"):
            i = int(first.removeprefix("INVESTIGATE mod").split(".", 1)[0])
            steps = [[_read(i)], [_grep(i)]]
            if done < len(steps):
                return _response(latency, steps[done])
            return _response(latency, [], f"mod{i} uses helper_{i} in use{i}.py.")
        if first.startswith("EDIT use"):
            i = int(first.removeprefix("EDIT use").split(".", 1)[0])
            if done < 1:
                return _response(latency, _edit_steps(i)[0])
            return _response(latency, [], f"use{i}.py now returns {2 * i}.")
        plan = _parent_plan(mode, files)
        reports = sum(1 for m in messages if m["role"] == "user" and "[Background" in m["content"])
        calls_made = 0
        for index, calls in enumerate(plan):
            if done == calls_made:
                return _response(latency, plan[index])
            calls_made += len(calls)
        if mode == "background" and reports < files:
            return _response(latency, [], "Waiting for the children.")
        return _response(latency, [], "All investigated.")

    return respond


def _repo(root: Path, files: int) -> None:
    for i in range(files):
        (root / f"mod{i}.py").write_text(f"from use{i} import helper_{i}\n")
        (root / f"use{i}.py").write_text(f"def helper_{i}():\n    return {i}\n")
    git = ["git", "-c", "user.name=bench", "-c", "user.email=bench@localhost"]
    subprocess.run([*git, "init", "-q"], cwd=root, check=True)
    subprocess.run([*git, "add", "."], cwd=root, check=True)
    subprocess.run([*git, "commit", "-qm", "start"], cwd=root, check=True)


async def _run(mode: str, files: int, latency: float, work: Path) -> tuple[float, int]:
    server = ScriptedServer()
    server.responder = _responder(mode, files, latency)
    await server.start()
    root = work / mode
    root.mkdir()
    _repo(root, files)
    settings = load_settings(
        {"sessions_dir": work / "sessions", "sandbox": "none", "repo_map_tokens": 0},
        user_config=work / "no-config.toml",
        env={},
    )
    backend = OpenAIBackend(server.base_url, "test-model")
    await backend.check()
    events: list[p.Event] = []
    session = await open_session(
        settings,
        root,
        SessionOptions(
            emit=events.append,
            approver=RefuseApprover(),
            approval_mode="full-auto",
            backend=backend,
            wait_for_background=True,
        ),
    )
    started = time.perf_counter()
    finished = await session.run_turn("Investigate every mod*.py file.")
    elapsed = time.perf_counter() - started
    await session.close()
    await server.stop()
    if finished.status != "completed" or finished.final_text != "All investigated.":
        raise SystemExit(f"{mode}: the run did not complete ({finished.status})")
    if mode in ("worktree", "shared"):
        edited = [(root / f"use{i}.py").read_text() for i in range(files)]
        if any(f"return {2 * i}" not in text for i, text in enumerate(edited)):
            raise SystemExit(f"{mode}: an edit is missing from the workspace")
    return elapsed, len(server.chat_requests)


async def _main(files: int, latency: float) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        os.environ["XDG_DATA_HOME"] = str(work / "data")  # checkpoints stay in the temp dir
        results = {mode: await _run(mode, files, latency, work) for mode in _MODES}
    seconds = {mode: elapsed for mode, (elapsed, _) in results.items()}
    print(f"{files} investigations (read + grep + answer each), {latency:g} s per model response")
    for mode, (elapsed, requests) in results.items():
        if mode == "background":
            print(f"{files} background investigations while the parent reads {files} files itself")
        if mode == "worktree":
            print(f"{files} children each editing one file")
        print(f"  {_MODES[mode]:<40} {elapsed:6.2f} s  ({requests} requests)")
    ratios = {
        "ratio": seconds["sequential"] / seconds["subagents"],
        "background_ratio": seconds["foreground"] / seconds["background"],
        "worktree_ratio": seconds["shared"] / seconds["worktree"],
    }
    print(f"subagents vs sequential in one context: {ratios['ratio']:.2f}x faster")
    print(f"background children vs foreground children: {ratios['background_ratio']:.2f}x faster")
    print(
        f"worktree children vs shared-workspace children: {ratios['worktree_ratio']:.2f}x "
        "(below 1: the cost of making and merging the worktrees)"
    )
    rounded = {k: round(v, 2) for k, v in ratios.items()}
    print(json.dumps({"files": files, "latency_s": latency, **rounded}))
    if ratios["background_ratio"] < BACKGROUND_TARGET:
        raise SystemExit(
            f"miss: background children were {ratios['background_ratio']:.2f}x faster than "
            f"foreground ones; the target is {BACKGROUND_TARGET}x"
        )
    print(f"target met: background children at least {BACKGROUND_TARGET}x faster")


_MODES = {
    "subagents": "subagents (parallel children)",
    "sequential": "sequential in one context (peer)",
    "batched": "batched in one context (info)",
    "background": "background children (parent works on)",
    "foreground": "foreground children (peer)",
    "worktree": "each in its own worktree, merged back",
    "shared": "all in the shared workspace (peer)",
}


def main() -> None:
    """Run the benchmark from the command line."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=4)
    parser.add_argument("--latency", type=float, default=0.5)
    args = parser.parse_args()
    asyncio.run(_main(args.files, args.latency))


if __name__ == "__main__":
    main()
