"""Stream-ingest benchmark: clover-code's OpenAIBackend against the official openai SDK.

A loopback server in a separate process (so its CPU does not count) replays
a long, deterministic stream shaped like SGLang serving Clover: >= 100k
tokens in 32-token blocks, one chunk per block, cumulative usage on every
chunk, reasoning, answer text and tool calls (whole parameters per delta)
spread over a sequence of responses, as in an agent loop. Both clients
consume every response as fast as they can, in alternating repetitions of
the same run:

* clover-code: ``OpenAIBackend.stream`` consuming every engine event;
* openai SDK: ``AsyncOpenAI().chat.completions.create(stream=True)``
  iterating every chunk (and reading its delta, as any consumer must).

A token-per-chunk variant (llama.cpp-shaped) is printed for information.

    python bench/stream_ingest.py [--tokens 102400] [--reps 3] [--token-variant-tokens 20480]

Targets: clover-code ingests >= 2x as fast as the SDK and >= 50,000 tokens/s
(the vendor's peak is ~680 tokens/s: the client must never be the
bottleneck). Exits 1 if a target is missed.
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import random
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

_ROOT = Path(__file__).resolve().parent.parent
# The scripted server and stream shapes are the ones the integration tests use.
sys.path.insert(0, str(_ROOT))

from bench.targets import Targets  # noqa: E402
from clover_code.engine.base import ChatRequest, ToolSpec  # noqa: E402
from clover_code.engine.events import Failed, Usage  # noqa: E402
from clover_code.engine.remote.backend import OpenAIBackend  # noqa: E402
from tests.integration.sse_server import (  # noqa: E402
    RecordedRequest,
    ScriptedResponse,
    ScriptedServer,
    frame,
    sse_response,
)
from tests.integration.stream_shapes import LlamaCppStream, SGLangStream  # noqa: E402

RATIO_TARGET = 2.0
RATE_TARGET = 50_000
RESPONSES = 8  # an agent loop: each response ends in a tool call

_VOCABULARY = (
    "def return self value block token stream parse file path import class "
    "the model writes code for test and then checks each line of output "
    "with care; if None else: print(result) -> list[str] {} [] () # why not"
)
_WORDS = _VOCABULARY.split(" ")

EDIT_TOOL = ToolSpec(
    "edit_file",
    "Replace text in a file.",
    {
        "type": "object",
        "properties": {"path": {"type": "string"}, "old": {"type": "string"}},
        "required": ["path", "old"],
    },
)


def _block_text(rng: random.Random) -> str:
    # About 32 tokens' worth: ~26 words of code-like text.
    return " ".join(rng.choice(_WORDS) for _ in range(26)) + "\n"


def _framed(chunks: list[dict[str, Any]]) -> ScriptedResponse:
    """One SSE response, framed once so the server only copies bytes."""
    steps = sse_response(chunks).steps or []
    return ScriptedResponse(steps=[frame(steps)], content_type="text/event-stream")


def sglang_responses(total_tokens: int) -> list[ScriptedResponse]:
    """A deterministic agent-loop run: reasoning, answer and tool calls, 32 tokens a chunk."""
    rng = random.Random(1234)
    per_response = total_tokens // RESPONSES // 32
    responses = []
    for turn in range(RESPONSES):
        stream = SGLangStream(model="sglang-shape")
        # Tool-call parameters are blocks too: two here.
        text_blocks = per_response - 2
        reasoning = text_blocks // 4
        stream.reasoning(*(_block_text(rng) for _ in range(reasoning)))
        stream.content(*(_block_text(rng) for _ in range(text_blocks - reasoning)))
        stream.tool_call("edit_file", {"path": f"src/m{turn}.py", "old": _block_text(rng)})
        responses.append(_framed(stream.chunks()))
    return responses


def token_responses(total_tokens: int) -> list[ScriptedResponse]:
    """The same kind of run, one token per chunk (llama.cpp-shaped)."""
    rng = random.Random(99)
    per_response = total_tokens // RESPONSES
    responses = []
    for turn in range(RESPONSES):
        stream = LlamaCppStream(model="token-shape")
        while stream.tokens < per_response - 40:
            stream.content(_block_text(rng))
        stream.tool_call("edit_file", {"path": f"src/m{turn}.py", "old": "x = 1"})
        responses.append(_framed(stream.chunks()))
    return responses


def _serve(total_tokens: int, token_variant_tokens: int, port_pipe: Any) -> None:
    """The server process: answer each request with the next response of its shape."""
    shapes = {
        "sglang-shape": sglang_responses(total_tokens),
        "token-shape": token_responses(token_variant_tokens),
    }
    counters = dict.fromkeys(shapes, 0)

    def respond(request: RecordedRequest) -> ScriptedResponse:
        model = request.json()["model"]
        responses = shapes[model]
        response = responses[counters[model] % len(responses)]
        counters[model] += 1
        return response

    async def main() -> None:
        server = ScriptedServer(models=list(shapes))
        server.responder = respond
        await server.start()
        port_pipe.send(server.port)
        await server.serve_forever()

    asyncio.run(main())


@dataclass
class Measure:
    """One timed run of one client over the whole sequence of responses."""

    tokens: int
    wall: float
    cpu: float

    @property
    def rate(self) -> float:
        return self.tokens / self.wall


MESSAGES: list[dict[str, Any]] = [{"role": "user", "content": "Refactor the parser."}]


class _Clock:
    """Wall and process-CPU time from ``start()`` to ``stop()``."""

    def start(self) -> None:
        self.cpu, self.wall = time.process_time(), time.perf_counter()

    def stop(self, tokens: int) -> Measure:
        return Measure(tokens, time.perf_counter() - self.wall, time.process_time() - self.cpu)


async def run_clover(base_url: str, model: str) -> Measure:
    """Consume every engine event of every response (client set-up not timed).

    Tokens are counted from the reported usage, as for the SDK, so both
    clients are measured on the same number.
    """
    backend = OpenAIBackend(base_url, model, max_retries=0)
    request = ChatRequest(messages=MESSAGES, tools=[EDIT_TOOL])
    tokens = 0
    clock = _Clock()
    clock.start()
    try:
        for _ in range(RESPONSES):
            async for event in backend.stream(request):
                if type(event) is Usage:
                    tokens += event.completion_tokens
                elif type(event) is Failed:
                    raise SystemExit(f"clover-code failed to ingest the stream: {event.error}")
        return clock.stop(tokens)
    finally:
        await backend.aclose()


async def run_openai_sdk(base_url: str, model: str) -> Measure:
    """Iterate every chunk of every response with the official SDK (set-up not timed)."""
    import openai

    client = openai.AsyncOpenAI(base_url=base_url, api_key="bench", max_retries=0)
    # The SDK's TypedDict parameter types add nothing to a benchmark.
    messages: Any = MESSAGES
    tools: Any = [EDIT_TOOL.openai()]
    tokens = 0
    clock = _Clock()
    clock.start()
    try:
        for _ in range(RESPONSES):
            stream = await client.chat.completions.create(
                model=model,
                messages=messages,
                tools=tools,
                stream=True,
                stream_options={"include_usage": True},
            )
            async for chunk in stream:
                for choice in chunk.choices:
                    delta = choice.delta
                    _ = delta.content, delta.tool_calls
                if chunk.usage is not None and not chunk.choices:
                    tokens += chunk.usage.completion_tokens
        return clock.stop(tokens)
    finally:
        await client.close()


def measure(run: Callable[[str, str], Awaitable[Measure]], base_url: str, model: str) -> Measure:
    return asyncio.run(run(base_url, model))  # type: ignore[arg-type]


def compare(base_url: str, model: str, reps: int) -> tuple[Measure, Measure]:
    """Alternate the two clients ``reps`` times after a warm-up; return medians by rate."""
    measure(run_clover, base_url, model)
    measure(run_openai_sdk, base_url, model)
    ours: list[Measure] = []
    theirs: list[Measure] = []
    for rep in range(reps):
        pair = [(run_clover, ours), (run_openai_sdk, theirs)]
        for run, results in pair if rep % 2 == 0 else reversed(pair):
            results.append(measure(run, base_url, model))
    if {m.tokens for m in ours} != {m.tokens for m in theirs}:
        raise SystemExit(
            f"the clients saw different token counts ({ours[0].tokens:,} vs "
            f"{theirs[0].tokens:,}); the benchmark stream is broken"
        )
    return _median(ours), _median(theirs)


def _median(results: list[Measure]) -> Measure:
    rate = statistics.median(m.rate for m in results)
    return min(results, key=lambda m: abs(m.rate - rate))


def report(label: str, ours: Measure, theirs: Measure) -> float:
    ratio = ours.rate / theirs.rate
    print(f"[{label}] {ours.tokens:,} tokens per run")
    for name, m in (("clover-code", ours), ("openai-sdk ", theirs)):
        print(
            f"  {name}: {m.rate:12,.0f} tok/s   wall {m.wall * 1000:8.1f} ms"
            f"   cpu {m.cpu * 1000:8.1f} ms"
        )
    return ratio


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", type=int, default=102_400, help="tokens per run (>= 100k)")
    parser.add_argument(
        "--token-variant-tokens",
        type=int,
        default=20_480,
        help="tokens per run of the token-per-chunk variant (the SDK is slow there)",
    )
    parser.add_argument("--reps", type=int, default=3, help="alternating repetitions")
    args = parser.parse_args()

    receive, send = multiprocessing.Pipe(duplex=False)
    server = multiprocessing.Process(
        target=_serve, args=(args.tokens, args.token_variant_tokens, send), daemon=True
    )
    server.start()
    try:
        if not receive.poll(60):
            print("the benchmark server did not start within 60 s", file=sys.stderr)
            return 1
        base_url = f"http://127.0.0.1:{receive.recv()}/v1"
        ours, theirs = compare(base_url, "sglang-shape", args.reps)
        ratio = report("SGLang-shaped: one chunk per 32-token block", ours, theirs)
        tok_ours, tok_theirs = compare(base_url, "token-shape", args.reps)
        tok_ratio = report("llama.cpp-shaped: one token per chunk (info)", tok_ours, tok_theirs)
    finally:
        server.terminate()
        server.join(5)

    print(
        f"token-per-chunk ratio (info): {tok_ratio:.1f}x; clover-code: {tok_ours.rate:,.0f} tok/s"
    )
    targets = Targets()
    targets.check(
        f"ingest >= {RATIO_TARGET:g}x the openai SDK's rate (SGLang-shaped)",
        ratio >= RATIO_TARGET,
        f"{ratio:.1f}x: {ours.rate:,.0f} vs {theirs.rate:,.0f} tok/s",
    )
    targets.check(
        f"ingest >= {RATE_TARGET:,} tok/s (SGLang-shaped)",
        ours.rate >= RATE_TARGET,
        f"{ours.rate:,.0f} tok/s",
    )
    return targets.exit_status()


if __name__ == "__main__":
    sys.exit(main())
