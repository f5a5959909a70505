"""UI streaming benchmark: the real clover-code app against Textual's own ``MarkdownStream``.

Four apps run one after another in this process, several rounds, clover-code
and the peer swapping places every other round, each fed the same stream of 32-token
blocks shaped like Clover's (each block comes after 4-8 denoising drafts, then
its text is committed):

* clover-code: the real ``CloverApp`` around a real ``Session`` (agent loop,
  transcript file, event bridge) whose backend replays the stream, with the
  live denoising view on;
* clover-code shaded (for information): the same, with each committed block
  carrying its tokens' fill confidences and the confidence view on, so the
  answer is drawn shaded as it streams;
* MarkdownStream (the peer the targets name): a minimal Textual app, an
  ``Input`` under a ``Markdown`` widget in an anchored scroll view, that
  writes each committed block to ``Markdown.get_stream`` (drafts ignored);
* Markdown.append (for information): the same app awaiting ``Markdown.append``
  per block, which Textual's docs say falls behind above ~20 appends/s.

Each app draws to a terminal of its own (``bench/ui_frames.py``): a
non-headless driver, so the app encodes every frame as it would for a real
terminal, that keeps each write with its time. After the run the writes are
replayed into a character grid, a frame at a time, and read:

* **block-to-screen lag**: from the moment the backend yields a block's
  commit to the driver write of the first frame whose grid shows that block.
  Every block carries a marker word (``zq0042``), masked in its drafts so the
  denoising view never shows it; a block counts as shown once it or a later
  block is on the grid (the text above the newest block is drawn). Reported
  p50/p95, and how many blocks were shown;
* **key echo**: from the stream's first block until the app has the whole
  answer, a thread presses a key every 50 ms through the driver
  (``Driver.process_message``, as a terminal's input thread does); a key's
  echo is the time from the press to the driver write of the first frame
  whose focused widget shows the text typed up to that key (or later text).
  Only character keys are timed (a round of them, then Ctrl+U). Reported
  p50/p95;
* **CPU**: this process's CPU time over the same period, in % of one core.

Phases: Clover's vendor peak (680 tokens/s, 21 blocks/s); the same with two
busy processes that this script starts (the machine loaded); unpaced (as
fast as the producer can go: a fast server or a replay). Each figure is the
median over the rounds; each ratio is clover-code's median over the other
app's. Targets (exit 1 on a miss):

* block-to-screen lag p50 and p95 at 680 tokens/s <= 1.2x MarkdownStream's;
* key echo p95, unpaced and at 680 tokens/s loaded, <= 1.2x MarkdownStream's;
* clover-code has the whole answer in every round (680 tokens/s and
  unpaced), and its widgets draw it line for line as a one-shot render of
  the text; so does clover-code shaded (a one-shot shaded render).

The targets are clover-code's with the confidence view off; the shaded row's
figures are reported beside them, with its ratios to ``MarkdownStream``.

    python bench/ui_stream.py [--seconds 8] [--rounds 3] [--unpaced-blocks 400]
                              [--phases 680,loaded,unpaced]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import importlib
import math
import os
import random
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import AsyncGenerator, Awaitable, Callable
from pathlib import Path
from typing import Any

_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(_ROOT))

# First, as in clover-code itself: it sets the screen's refresh rate before
# Textual loads (all apps below then repaint at up to 120 Hz).
importlib.import_module("clover_code.ui")
from textual.app import App, ComposeResult  # noqa: E402
from textual.containers import VerticalScroll  # noqa: E402
from textual.visual import Visual  # noqa: E402
from textual.widgets import Input, Markdown  # noqa: E402

from bench.targets import Targets, machine_load  # noqa: E402
from bench.ui_frames import (  # noqa: E402
    KEYS,
    MARKER,
    FrameDriver,
    Run,
    analyse,
    field_look,
    press_keys,
)
from clover_code.config.load import load_settings  # noqa: E402
from clover_code.engine import events as ev  # noqa: E402
from clover_code.engine.base import ChatRequest  # noqa: E402
from clover_code.errors import EngineError  # noqa: E402
from clover_code.protocol.confidence import TokenPiece  # noqa: E402
from clover_code.ui.confidence import shaded_content  # noqa: E402
from clover_code.ui.options import AppOptions  # noqa: E402
from clover_code.ui.widgets.answer import Answer, render_plain  # noqa: E402
from clover_code.ui.widgets.answer_parts import AnswerPart, ShadedPart  # noqa: E402

BLOCK_TOKENS = 32
CLOVER_TOKENS_PER_SECOND = 680
SETTLE = 0.4
"""Seconds the run goes on after an app has everything (its last frames)."""
RATIO = 1.2
"""clover-code's figure may be at most this times MarkdownStream's."""
SIZE = (120, 40)
_WORD = re.compile(r"[a-z]+ $")


# ---------------------------------------------------------------- the stream


def document(blocks: int, seed: int = 7) -> list[list[str]]:
    """A Markdown answer (paragraphs, lists, code, headings) cut into 32-token blocks;
    each block's last word is its marker."""
    rng = random.Random(seed)
    vocabulary = (
        "the model writes code for each test and then checks every line of output "
        "block token stream parse file path import class value return self config"
    )
    words = vocabulary.split()
    tokens: list[str] = []
    while len(tokens) < blocks * BLOCK_TOKENS:
        kind = rng.random()
        if kind < 0.1:
            tokens += ["## ", *(rng.choice(words) + " " for _ in range(4)), "\n\n"]
        elif kind < 0.3:
            for _ in range(rng.randint(2, 5)):
                tokens += ["- ", *(rng.choice(words) + " " for _ in range(8)), "\n"]
            tokens.append("\n")
        elif kind < 0.45:
            tokens += ["```python\n"]
            for _ in range(rng.randint(3, 8)):
                tokens += ["    ", *(rng.choice(words) + " " for _ in range(6)), "\n"]
            tokens += ["```\n\n"]
        else:
            tokens += [rng.choice(words) + " " for _ in range(rng.randint(30, 90))]
            tokens += ["`code` ", "**bold** ", "\n\n"]
    out = []
    for index in range(blocks):
        block = tokens[index * BLOCK_TOKENS : (index + 1) * BLOCK_TOKENS]
        last = max(i for i, token in enumerate(block) if _WORD.fullmatch(token))
        block[last] = f"zq{index:04d} "
        out.append(block)
    return out


def marker_at(block: list[str]) -> int:
    """Where the block's marker is (kept masked in its drafts)."""
    return next(i for i, token in enumerate(block) if MARKER.fullmatch(token.strip()))


def confidences(blocks: list[list[str]], seed: int = 11) -> list[list[TokenPiece]]:
    """A fill confidence per token of each block: most sure, some unsure, a few low."""
    rng = random.Random(seed)
    return [
        [TokenPiece(len(token), rng.choice((0.99, 0.99, 0.97, 0.95, 0.8, 0.6, 0.3)), 1)
         for token in block]
        for block in blocks
    ]  # fmt: skip


class BenchBackend:
    """Replays the document: drafts, then the committed block, at ``rate`` blocks/s
    (with ``pieces``, each block carries its tokens' fill confidences)."""

    name = "bench"
    model = "clover-bench"
    block_size = BLOCK_TOKENS
    notices: tuple[str, ...] = ()
    failure: EngineError | None = None  # it never fails

    def __init__(
        self,
        blocks: list[list[str]],
        rate: float | None,
        run: Run,
        pieces: list[list[TokenPiece]] | None = None,
    ) -> None:
        self.blocks, self.rate, self.run = blocks, rate, run
        self.pieces = pieces
        self.rng = random.Random(3)

    async def stream(self, request: ChatRequest) -> AsyncGenerator[ev.EngineEvent, None]:
        start = time.perf_counter()
        for index, tokens in enumerate(self.blocks):
            steps = self.rng.randint(4, 8)
            order = list(range(len(tokens)))
            self.rng.shuffle(order)
            hidden = marker_at(tokens)
            for step in range(1, steps + 1):
                if self.rate:
                    await _sleep_until(start + (index + step / (steps + 1)) / self.rate)
                shown = set(order[: len(tokens) * step // (steps + 1)]) - {hidden}
                masked = [i not in shown for i in range(len(tokens))]
                yield ev.BlockDraft(index, step, tokens, masked)
            if self.rate:
                await _sleep_until(start + (index + 1) / self.rate)
            else:
                await asyncio.sleep(0)
            text = "".join(tokens)
            self.run.arrivals.append(time.perf_counter())
            yield ev.ContentDelta(text)
            pieces = self.pieces[index] if self.pieces is not None else None
            yield ev.BlockCommitted(index, text, len(tokens), steps, pieces=pieces)
        yield ev.Usage(100, len(self.blocks) * BLOCK_TOKENS)
        yield ev.Finished("stop")

    async def check(self) -> None:
        return None

    async def aclose(self) -> None:
        return None


async def _sleep_until(deadline: float) -> None:
    await asyncio.sleep(max(0.0, deadline - time.perf_counter()))


# ---------------------------------------------------------------- the terminal


# ---------------------------------------------------------------- driving an app


async def measure(
    app: App[Any], run: Run, start: Callable[[], object], done: Callable[[], bool], limit: float
) -> str:
    """Start the stream and, from its first block, press keys until ``done`` (the whole
    answer is on its way to the screen) or ``limit`` s; returns the characters typed."""
    driver = app._driver
    assert isinstance(driver, FrameDriver)
    alphabet = "".join(c for c in KEYS if c not in field_look(app, SIZE))
    stop = threading.Event()
    driver.frames = run.frames
    deadline = time.perf_counter() + limit
    start()
    while not run.arrivals and time.perf_counter() < deadline:
        await asyncio.sleep(0.005)
    cpu0, wall0 = time.process_time(), time.perf_counter()
    keys = threading.Thread(target=press_keys, args=(driver, run, alphabet, stop), daemon=True)
    keys.start()
    while time.perf_counter() < deadline:
        if done():
            run.finished = True
            break
        await asyncio.sleep(0.02)
    stop.set()
    run.cpu, run.wall = time.process_time() - cpu0, time.perf_counter() - wall0
    keys.join()
    await asyncio.sleep(SETTLE)  # the frames that show the last block and the last keys
    driver.frames = []
    return alphabet


async def run_clover(
    blocks: list[list[str]], rate: float | None, limit: float, *, shaded: bool = False
) -> Run:
    """The real app; ``shaded``: the blocks carry confidences and the view is on."""
    from clover_code.agent.open import SessionOptions, open_session
    from clover_code.ui.app import CloverApp

    run = Run()
    whole = "".join("".join(b) for b in blocks)
    with tempfile.TemporaryDirectory() as tmp:
        settings = load_settings(
            {"sessions_dir": Path(tmp) / "s", "sandbox": "none"},
            user_config=Path(tmp) / "none.toml",
            env={},
        )
        backend = BenchBackend(blocks, rate, run, confidences(blocks) if shaded else None)

        async def factory(emit: Any, resume: Path | None) -> Any:
            return await open_session(
                settings, Path(tmp), SessionOptions(emit=emit, backend=backend)
            )

        options = AppOptions(shade_confidence=shaded)
        app = CloverApp(
            factory, cwd=Path(tmp), sessions_dir=None, git_status=False, options=options
        )
        app.driver_class = FrameDriver

        def done() -> bool:
            answers = list(app.query(Answer))
            if app.turn_running or not answers:
                return False
            return answers[-1].text == whole and not answers[-1].pending

        async with app.run_test(headless=False, size=SIZE) as pilot:
            while app.started is None:
                await pilot.pause(0.05)
            _check_frames(app)
            alphabet = await measure(app, run, lambda: app.send_text("go"), done, limit)
            await pilot.pause()  # the keys still queued, before the app closes
            answer = app.query(Answer).last()
            width = answer.content_region.width
            if shaded:
                below = app.options.low_confidence
                run.equal = answer.text == whole and answer.shaded
                run.equal = run.equal and drawn_shaded(answer) == one_shot_shaded(answer, below)
            else:
                run.equal = answer.text == whole and drawn(answer) == render_plain([whole], width)
    analyse(run, alphabet, SIZE)
    return run


def drawn_shaded(answer: Answer) -> list[list[tuple[str, Any]]]:
    """The lines the shaded answer's widgets draw: each cell's character and background."""
    lines: list[list[tuple[str, Any]]] = []
    for part in answer.query_children(ShadedPart):
        lines += [_cells(part.render_line(y)) for y in range(part.size.height)]
    return lines


def one_shot_shaded(answer: Answer, below: float) -> list[list[tuple[str, Any]]]:
    """The lines of the whole answer shaded at once, as a ``Static`` draws it."""
    assert answer.pieces is not None
    part = answer.query_children(ShadedPart).last()
    whole = shaded_content(answer.raw, answer.pieces, below=below)
    strips = Visual.to_strips(part, whole, part.size.width, None, part.visual_style)
    return [_cells(strip) for strip in strips]


def _cells(strip: Any) -> list[tuple[str, Any]]:
    return [(c, seg.style.bgcolor if seg.style else None) for seg in strip for c in seg.text]


def drawn(answer: Answer) -> list[str]:
    """The lines the answer's widgets draw (a blank line between two parts)."""
    lines: list[str] = []
    for part in answer.query_children(AnswerPart):
        if lines:
            lines.append("")
        lines += [part.render_line(y).text.rstrip() for y in range(part.size.height)]
    return lines


def _check_frames(app: App[Any]) -> None:
    if not isinstance(app._driver, FrameDriver):
        raise SystemExit("the app did not draw through the benchmark's terminal")
    app._driver.frames = []


class PeerApp(App[None]):
    """Textual's own streaming: a ``Markdown`` widget fed through ``MarkdownStream``
    (or ``Markdown.append``), an ``Input`` under it."""

    CSS = "VerticalScroll { height: 1fr; } Input { height: 3; }"

    def __init__(self) -> None:
        super().__init__(driver_class=FrameDriver)

    def compose(self) -> ComposeResult:
        with VerticalScroll() as scroll:
            self.scroll_view = scroll
            self.markdown = Markdown()
            yield self.markdown
        yield Input()

    def on_mount(self) -> None:
        self.scroll_view.anchor()
        self.query_one(Input).focus()


async def run_peer(
    blocks: list[list[str]], rate: float | None, limit: float, *, stream: bool
) -> Run:
    run = Run()
    backend = BenchBackend(blocks, rate, run)
    app = PeerApp()
    whole = "".join("".join(b) for b in blocks)
    written: list[str] = []
    stopping = asyncio.Event()

    async def consume() -> None:
        queue: asyncio.Queue[str | None] = asyncio.Queue()

        async def produce() -> None:
            async for event in backend.stream(ChatRequest(messages=[])):
                if isinstance(event, ev.BlockCommitted):
                    queue.put_nowait(event.text)
            queue.put_nowait(None)

        producer = asyncio.create_task(produce())
        markdown_stream = Markdown.get_stream(app.markdown) if stream else None
        write = markdown_stream.write if markdown_stream else app.markdown.append
        while not stopping.is_set() and (text := await queue.get()) is not None:
            await write(text)
            written.append(text)
        producer.cancel()
        if markdown_stream is not None:
            await markdown_stream.stop()

    def done() -> bool:
        return len(written) == len(blocks) and app.markdown.source == whole

    tasks: list[asyncio.Task[None]] = []
    async with app.run_test(headless=False, size=SIZE) as pilot:
        await pilot.pause(0.1)
        _check_frames(app)
        start = lambda: tasks.append(asyncio.create_task(consume()))  # noqa: E731
        alphabet = await measure(app, run, start, done, limit)
        stopping.set()
        await asyncio.gather(*tasks)
        await pilot.pause()  # the keys still queued, before the app closes
    analyse(run, alphabet, SIZE)
    return run


# ---------------------------------------------------------------- report

APPS = ("clover-code", "clover-code shaded", "MarkdownStream", "Markdown.append")
PEER = "MarkdownStream"
OURS = ("clover-code", "clover-code shaded")
COLUMNS = ("blocks shown", "lag p50", "lag p95", "echo p50", "echo p95", "CPU")


def pct(values: list[float], q: int) -> float:
    """The q-th percentile, in ms."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * q / 100))] * 1000


def figures(run: Run) -> dict[str, float]:
    return {
        "blocks shown": float(len(run.shown)),
        "lag p50": pct(run.shown, 50),
        "lag p95": pct(run.shown, 95),
        "echo p50": pct(run.echoes, 50),
        "echo p95": pct(run.echoes, 95),
        "CPU": 100 * run.cpu / run.wall if run.wall else 0.0,
    }


def medians(runs: list[Run]) -> dict[str, float]:
    each = [figures(r) for r in runs]
    return {k: statistics.median(f[k] for f in each) for k in COLUMNS}


def _cell(column: str, value: float) -> str:
    if column == "blocks shown":
        return f"{value:.0f}"
    if column == "CPU":
        return f"{value:.0f}%"
    return f"{value:.1f} ms"


def print_phase(title: str, table: dict[str, dict[str, float]]) -> None:
    """The apps' medians, then clover-code's ratio to each of the others."""
    print(f"\n== {title}")
    rows = [[name, *(_cell(c, table[name][c]) for c in COLUMNS)] for name in APPS]
    pairs = [
        ("clover-code", PEER),
        ("clover-code", "Markdown.append"),
        ("clover-code shaded", PEER),
        ("clover-code shaded", "clover-code"),
    ]
    for ours, other in pairs:
        ratios = [table[ours][c] / table[other][c] if table[other][c] else 0.0 for c in COLUMNS]
        rows.append([f"{ours} / {other}", *(f"{r:.2f}x" for r in ratios)])
    widths = [max(len(row[i]) for row in [["", *COLUMNS], *rows]) for i in range(len(COLUMNS) + 1)]
    for row in [["", *COLUMNS], *rows]:
        print(
            row[0].ljust(widths[0]), *(v.rjust(w) for v, w in zip(row[1:], widths[1:], strict=True))
        )


def verdict(targets: Targets, what: str, clover: float, peer: float) -> None:
    """Check clover-code's figure against ``RATIO`` times the peer's (not measured when
    the peer has none: it showed no block or echoed no key)."""
    ratio = clover / peer if peer else float("inf")
    met = None if math.isnan(peer) else ratio <= RATIO
    figure = f"clover-code {clover:.1f} ms, {PEER} {peer:.1f} ms: {ratio:.2f}x"
    targets.check(f"{what} <= {RATIO}x {PEER}'s", met, figure)


BUSY = """
import os, sys
parent = int(sys.argv[1])
while os.getppid() == parent:  # busy until stopped, or until the benchmark is gone
    for _ in range(100_000):
        pass
"""


class Load:
    """Two busy processes for the loaded phase (started and ended here)."""

    def __enter__(self) -> Load:
        busy = [sys.executable, "-c", BUSY, str(os.getpid())]
        self.procs = [subprocess.Popen(busy) for _ in range(2)]
        return self

    def __exit__(self, *exc: object) -> None:
        for proc in self.procs:
            proc.terminate()
        for proc in self.procs:
            proc.wait()


async def one_round(
    order: int, blocks: list[list[str]], rate: float | None, limit: float
) -> dict[str, Run]:
    """Each app once; clover-code and the peer swap places every other round."""
    makers: dict[str, Callable[[], Awaitable[Run]]] = {
        "clover-code": lambda: run_clover(blocks, rate, limit),
        "clover-code shaded": lambda: run_clover(blocks, rate, limit, shaded=True),
        "MarkdownStream": lambda: run_peer(blocks, rate, limit, stream=True),
        "Markdown.append": lambda: run_peer(blocks, rate, limit, stream=False),
    }
    names = ["clover-code", PEER, "clover-code shaded", "Markdown.append"]
    if order % 2:
        names[0], names[1] = names[1], names[0]
    return {name: await makers[name]() for name in names}


PHASES = ("680", "loaded", "unpaced")


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=8.0, help="length of the paced phases")
    parser.add_argument("--rounds", type=int, default=3, help="rounds of each phase")
    parser.add_argument("--unpaced-blocks", type=int, default=400, help="blocks, unpaced phase")
    parser.add_argument("--phases", default=",".join(PHASES), help="which phases (comma list)")
    args = parser.parse_args()
    peak = CLOVER_TOKENS_PER_SECOND / BLOCK_TOKENS
    paced = int(args.seconds * peak)
    unknown = [key for key in args.phases.split(",") if key not in PHASES]
    if unknown:
        parser.error(f"--phases: no phase {', '.join(unknown)}; choose from {', '.join(PHASES)}")
    if paced < 1:
        parser.error(f"--seconds {args.seconds:g} is shorter than one block (1/{peak:g} s)")
    if args.rounds < 1 or args.unpaced_blocks < 1:
        parser.error("--rounds and --unpaced-blocks must be at least 1")
    phases = {
        "680": ("680 tok/s (21 blocks/s)", peak, paced, False),
        "loaded": ("680 tok/s, loaded (two busy processes)", peak, paced, True),
        "unpaced": ("unpaced (as fast as the producer goes)", None, args.unpaced_blocks, False),
    }
    # Warm-up, not measured: first-use costs (imports, the syntax highlighter's lexers).
    await one_round(0, document(30), None, 30.0)
    targets = Targets()
    for key in args.phases.split(","):
        title, rate, count, loaded = phases[key]
        blocks = document(count)
        limit = 20.0 + 3 * count / peak
        runs: dict[str, list[Run]] = {name: [] for name in APPS}
        for order in range(args.rounds):
            with Load() if loaded else contextlib.nullcontext():
                got = await one_round(order, blocks, rate, limit)
            for name, run in got.items():
                runs[name].append(run)
        table = {name: medians(runs[name]) for name in APPS}
        print_phase(
            f"{title}: {count} blocks, medians of {args.rounds} rounds "
            f"({machine_load()} at its end)",
            table,
        )
        clover, peer = table["clover-code"], table[PEER]
        if key == "680":
            verdict(targets, "block-to-screen lag p50", clover["lag p50"], peer["lag p50"])
            verdict(targets, "block-to-screen lag p95", clover["lag p95"], peer["lag p95"])
        else:
            verdict(targets, f"key echo p95, {key},", clover["echo p95"], peer["echo p95"])
        peer_done = sum(run.finished for run in runs[PEER])
        for ours in OURS:
            finished = [run for run in runs[ours] if run.finished]
            line = (
                f"{ours} had the whole answer within {limit:.0f} s in {len(finished)} "
                f"of {args.rounds} rounds ({PEER}: {peer_done})"
            )
            if loaded:  # a loaded machine may starve any app: there only keys are a target
                print(f"{line} (for information)")
            else:
                targets.check(
                    f"{key}: {ours} has the whole answer in every round",
                    len(finished) == args.rounds,
                    line,
                )
            unequal = sum(run.equal is not True for run in finished)
            targets.check(
                f"{key}: {ours}'s streamed answer drawn as a one-shot render",
                not unequal,
                f"differs in {unequal} of {len(finished)} rounds" if unequal else "equal",
            )
    print()
    return targets.exit_status()


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
