"""Early tool calls: reading calls started while the response streams, against waiting for it.

A loopback scripted server (the integration tests' ``ScriptedServer``) streams
one SGLang-shaped response paced like Clover on a GB300: one 32-token block
every 1/21 s (``--rate``), 21 blocks (about 1 s). Three of its blocks are
whole tool calls, complete at about 0.2, 0.3 and 0.4 s: calls of an MCP tool
the user vouched for as read-only (``mcp_read_only``; the real MCP echo server
of the integration tests, its ``slow`` tool) that each take ``--tool`` seconds
(0.6) to run. The next request is answered at once with text.

A real session (the real ``OpenAIBackend``, the real MCP client, a temporary
git repository) runs the turn two ways, alternately, ``--rounds`` times each:

* early (``early_tools = true``, the default): each call starts as soon as its
  arguments are complete, while the rest of the response comes;
* the peer, waiting for the whole response (``early_tools = false``): the
  three calls then run concurrently, as reading calls always did.

The figure is the turn's wall time (the step: the response, its calls, and
the answer that follows them), median of the rounds. Target: early <= 0.75x
the peer. Ideal: 1.0 s against 1.6 s, 0.63x. A scripted model: the figures
measure the harness, not a model.

    python bench/early_tools.py [--rounds 5] [--rate 21] [--tool 0.6]

Exit status as ``bench/targets.py`` says.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(_ROOT))

from bench.targets import Targets, machine_load  # noqa: E402
from clover_code import protocol as p  # noqa: E402
from clover_code.agent.open import SessionOptions, open_session  # noqa: E402
from clover_code.agent.permissions.approval import RefuseApprover  # noqa: E402
from clover_code.config.load import load_settings  # noqa: E402
from clover_code.config.trust import TrustStore  # noqa: E402
from tests.integration.sse_server import (  # noqa: E402
    Pause,
    ScriptedResponse,
    ScriptedServer,
    Send,
    Step,
    encode_event,
    sse_response,
)
from tests.integration.stream_shapes import SGLangStream  # noqa: E402

TARGET = 0.75
MCP_SERVER = _ROOT / "tests" / "integration" / "mcp_echo_server.py"
BLOCKS = 21
CALL_BLOCKS = (4, 6, 8)
"""The blocks (0-based) that are whole tool calls: complete at 0.19, 0.29, 0.38 s at 21/s."""


def paced_response(rate: float, tool_seconds: float) -> ScriptedResponse:
    """The response: ``BLOCKS`` blocks at ``rate`` per second, three of them tool calls."""
    stream = SGLangStream()
    for block in range(BLOCKS):
        if block in CALL_BLOCKS:
            stream.tool_call("mcp__echo__slow", {"seconds": tool_seconds}, whole=True)
        else:
            stream.content(f"block {block} of the answer, still being denoised. ")
    steps: list[Step] = []
    for chunk in stream.chunks():
        steps.append(Send(encode_event(chunk)))
        steps.append(Pause(1 / rate))
    steps.append(Send(b"data: [DONE]\n\n"))
    return ScriptedResponse(steps=steps, content_type="text/event-stream")


async def one_turn(
    server: ScriptedServer, work: Path, early: bool, rate: float, tool_seconds: float
) -> float:
    """The wall time of one turn, with early tool calls on or off."""
    repo = work / f"repo-{time.monotonic_ns()}"
    repo.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    user_config = work / "user-config.toml"
    user_config.write_text(
        'mcp_read_only = ["mcp__echo__*"]\n'
        f'[mcp_servers.echo]\ncommand = "{sys.executable}"\nargs = ["{MCP_SERVER}"]\n'
    )
    settings = load_settings(
        {
            "sessions_dir": work / "sessions",
            "sandbox": "none",
            "base_url": server.base_url,
            "model": "test-model",
            "early_tools": early,
        },
        repo_root=repo,
        user_config=user_config,
        env={},
        store=TrustStore(work / "trusted.json"),
    )
    events: list[p.Event] = []
    session = await open_session(
        settings,
        repo,
        SessionOptions(emit=events.append, approver=RefuseApprover(), approval_mode="auto-edit"),
    )
    session.checkpoints = None  # undo snapshots are not what is measured
    server.enqueue(
        paced_response(rate, tool_seconds),
        sse_response(SGLangStream().content("All three read.").chunks()),
    )
    try:
        started = time.perf_counter()
        finished = await session.run_turn("read the three things")
        elapsed = time.perf_counter() - started
    finally:
        await session.close()
    done = [e for e in events if isinstance(e, p.ToolCallFinished) and e.status == "ok"]
    if finished.status != "completed" or len(done) != len(CALL_BLOCKS):
        raise SystemExit(f"the turn did not go as scripted: {finished.status}, {len(done)} calls")
    return elapsed


async def measure(rounds: int, rate: float, tool_seconds: float) -> tuple[float, float]:
    """Medians of the early and the waiting turn, measured alternately."""
    server = ScriptedServer()
    await server.start()
    times: dict[bool, list[float]] = {True: [], False: []}
    try:
        with tempfile.TemporaryDirectory(prefix="clover-early-") as tmp:
            work = Path(tmp)
            await one_turn(server, work, True, rate, tool_seconds)  # unmeasured warm-up
            for _ in range(rounds):
                for early in (True, False):
                    times[early].append(await one_turn(server, work, early, rate, tool_seconds))
    finally:
        await server.stop()
    for early in (True, False):
        label = "early start" if early else "after the response (peer)"
        figures = " ".join(f"{t:.3f}" for t in times[early])
        print(f"  {label:28} {figures} s", flush=True)
    return statistics.median(times[True]), statistics.median(times[False])


def main() -> int:
    """Run the bench; the exit status says whether the target was met."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--rate", type=float, default=21.0, help="blocks per second")
    parser.add_argument("--tool", type=float, default=0.6, help="seconds each call takes")
    args = parser.parse_args()
    print(
        f"one response of {BLOCKS} blocks at {args.rate:g}/s, three read-only MCP calls of "
        f"{args.tool:g} s complete at blocks {', '.join(str(b + 1) for b in CALL_BLOCKS)} "
        f"(scripted model); {machine_load()}",
        flush=True,
    )
    early, waiting = asyncio.run(measure(args.rounds, args.rate, args.tool))
    ratio = early / waiting
    print(f"turn wall time, median of {args.rounds}: early {early:.3f} s, peer {waiting:.3f} s")
    targets = Targets()
    targets.check(
        f"early start <= {TARGET}x waiting for the whole response",
        met=ratio <= TARGET,
        figure=f"{ratio:.2f}x: {early:.3f} s vs {waiting:.3f} s after the response",
    )
    return targets.exit_status()


if __name__ == "__main__":
    sys.exit(main())
