"""Subagent benchmark: N independent investigations with child agents vs in one context.

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

    python bench/subagents.py [--files 4] [--latency 0.5]

Prints the wall time of each and the ratio of "sequential in one context" to
"subagents". No target: the ratio follows from the request count on the
critical path (2N + 1 vs 5 requests), which the run confirms end to end.
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
from clover_code.config.settings import load_settings  # noqa: E402
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


def _task(i: int) -> Call:
    prompt = f"INVESTIGATE mod{i}.py: read it, find where its helper is used, answer."
    return "task", {"description": f"investigate mod{i}", "prompt": prompt}


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
        if mode == "subagents":
            plan = [[_task(i) for i in range(files)]]
        elif mode == "sequential":
            plan = [[step(i)] for i in range(files) for step in (_read, _grep)]
        else:
            plan = [[_read(i) for i in range(files)], [_grep(i) for i in range(files)]]
        calls_made = 0
        for index, calls in enumerate(plan):
            if done == calls_made:
                return _response(latency, plan[index])
            calls_made += len(calls)
        return _response(latency, [], "All investigated.")

    return respond


def _repo(root: Path, files: int) -> None:
    for i in range(files):
        (root / f"mod{i}.py").write_text(f"from use{i} import helper_{i}\n")
        (root / f"use{i}.py").write_text(f"def helper_{i}():\n    return {i}\n")
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)


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
        ),
    )
    started = time.perf_counter()
    finished = await session.run_turn("Investigate every mod*.py file.")
    elapsed = time.perf_counter() - started
    await session.close()
    await server.stop()
    if finished.status != "completed" or finished.final_text != "All investigated.":
        raise SystemExit(f"{mode}: the run did not complete ({finished.status})")
    return elapsed, len(server.chat_requests)


async def _main(files: int, latency: float) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        os.environ["XDG_DATA_HOME"] = str(work / "data")  # checkpoints stay in the temp dir
        results = {mode: await _run(mode, files, latency, work) for mode in _MODES}
    sub, _ = results["subagents"]
    seq, _ = results["sequential"]
    print(f"{files} investigations (read + grep + answer each), {latency:g} s per model response")
    for mode, (elapsed, requests) in results.items():
        print(f"  {_MODES[mode]:<32} {elapsed:6.2f} s  ({requests} requests)")
    print(f"subagents vs sequential in one context: {seq / sub:.2f}x faster")
    print(json.dumps({"files": files, "latency_s": latency, "ratio": round(seq / sub, 2)}))


_MODES = {
    "subagents": "subagents (parallel children)",
    "sequential": "sequential in one context (peer)",
    "batched": "batched in one context (info)",
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
