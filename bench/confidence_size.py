"""Confidence sizes: the compact form against the first form (three bytes a token).

Committed tokens' fill confidences, steps and lengths travel as one string
(``protocol/confidence_codec.py``): in each ``block_committed`` (stream-json,
ACP's metadata, serve's ``clover_block``) and, for a response's answer, in the
transcript's ``answer_confidence``. Measured: the characters stored per
token (the string as JSON carries it, no escapes) of

* a whole response's pieces in one string (the shape of ``answer_confidence``);
* each committed block's pieces in a string of its own (``BlockCommitted``;
  32 tokens, cut so for (b));

on two samples:

(a) real confidences: one response of ``--tokens`` (512) tokens from the tiny
    random ``Qwen3_5MoeForCausalLM`` of the tests, decoded by the hf engine
    (32-token blocks, threshold 0.95). A random model clears no threshold:
    one token a step, in no order, every confidence near 1/266, and a
    byte-level tokenizer (a multi-byte character is one piece of several
    tokens: figures are per piece). The worst case, not a forecast.
(b) Clover-like, synthetic (``tests/confidence_samples.py``): ``--responses``
    (40) responses of 500 tokens, LowConfidence-shaped steps (about 3.3
    tokens a step, leaning left to right), confidences skewed towards 1.0
    with the rule's fallbacks lower, token lengths as a real 262k tokenizer
    cuts this repository's docs and code.

Peer: the first form, measured in the same run (its encoder, kept here, is
checked against the first-form reader the package still has). For
information: the planar nibble layout with raw deflate when shorter (16
levels; a design considered and measured), and the CPU time to write and
read one block (medians of ``--repeats``).

Targets, on both samples: a whole response <= 1.2 characters a token; one
block <= 2.

    python bench/confidence_size.py [--tokens 512] [--responses 40] [--no-model]

Exit status as ``bench/targets.py`` says (2 with ``--no-model``: (a) is not
measured).
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import statistics
import sys
import tempfile
import time
import zlib
from collections.abc import Callable, Sequence
from pathlib import Path

_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(_ROOT))

from bench.targets import Targets, machine_load  # noqa: E402
from clover_code.protocol.confidence import TokenPiece, decode_pieces, encode_pieces  # noqa: E402
from tests.confidence_samples import clover_like_pieces  # noqa: E402

RESPONSE_TARGET = 1.2
BLOCK_TARGET = 2.0
BLOCK = 32

Form = Callable[[Sequence[TokenPiece]], str]

Response = list[list[TokenPiece]]
"""One response: its committed blocks' pieces."""


def first_form(pieces: Sequence[TokenPiece]) -> str:
    """The first form's encoder: base64 of (confidence 0..255, step, length) per piece,
    a piece over 255 characters in two, a step over 255 written as 255."""
    out = bytearray()
    for piece in pieces:
        q = min(255, max(0, round(piece.confidence * 255)))
        left = piece.chars
        while True:
            size = min(left, 255)
            out += bytes((q, min(255, max(0, piece.step)), size))
            left -= size
            if left <= 0:
                break
    return base64.b64encode(bytes(out)).decode("ascii")


def nibbles_deflated(pieces: Sequence[TokenPiece]) -> str:
    """The considered design: 16 levels, then steps, then lengths, a nibble each
    (15 escapes to a byte, then a varint), raw deflate when shorter, base64."""

    def plane(values: list[int]) -> bytes:
        out, extra = bytearray(), bytearray()
        for value in values:
            if value >= 15:
                value -= 15
                while value >= 128:
                    extra.append(128 | value & 127)
                    value >>= 7
                extra.append(value)
                value = 15
            out.append(value)
        if len(out) % 2:
            out.append(0)
        return bytes(out[i] << 4 | out[i + 1] for i in range(0, len(out), 2)) + extra

    raw = b"".join(
        plane(values)
        for values in (
            [min(15, max(0, round(p.confidence * 15))) for p in pieces],
            [max(0, p.step) for p in pieces],
            [max(0, p.chars) for p in pieces],
        )
    )
    packer = zlib.compressobj(9, zlib.DEFLATED, -15)
    packed = packer.compress(raw) + packer.flush()
    return base64.b64encode(min(packed, raw, key=len)).decode("ascii")


def _check_first_form(responses: list[Response]) -> None:
    """The peer writes what the package's first-form reader reads (to its precision)."""
    for response in responses[:4]:
        pieces = _whole(response)
        back = decode_pieces(first_form(pieces))
        assert sum(p.chars for p in back) == sum(p.chars for p in pieces)
        if all(p.chars <= 255 and p.step <= 255 for p in pieces):
            assert [p.chars for p in back] == [p.chars for p in pieces]
            pairs = zip(back, pieces, strict=True)
            assert all(abs(a.confidence - b.confidence) <= 0.5 / 255 for a, b in pairs)


def _whole(response: Response) -> list[TokenPiece]:
    return [piece for block in response for piece in block]


def _sizes(responses: list[Response], form: Form) -> tuple[float, float]:
    """Characters per token: each response in one string, and each block in its own."""
    tokens = sum(len(block) for r in responses for block in r)
    whole = sum(len(form(_whole(r))) for r in responses)
    blocks = sum(len(form(block)) for r in responses for block in r)
    return whole / tokens, blocks / tokens


def _cpu_per_block(blocks: list[list[TokenPiece]], repeats: int) -> dict[str, tuple[float, float]]:
    """Median CPU microseconds to write and to read one block, per form."""
    out: dict[str, tuple[float, float]] = {}
    forms: tuple[tuple[str, Form], ...] = (("compact", encode_pieces), ("first form", first_form))
    for name, form in forms:
        written = [form(b) for b in blocks]
        times: list[tuple[float, float]] = []
        for _ in range(repeats):
            start = time.process_time()
            for block in blocks:
                form(block)
            middle = time.process_time()
            for text in written:
                decode_pieces(text)
            end = time.process_time()
            times.append((middle - start, end - middle))
        scale = 1e6 / len(blocks)
        out[name] = (
            statistics.median(t[0] for t in times) * scale,
            statistics.median(t[1] for t in times) * scale,
        )
    return out


def _blocks(pieces: list[TokenPiece]) -> Response:
    return [pieces[at : at + BLOCK] for at in range(0, len(pieces), BLOCK)]


async def _tiny_response(tokens: int) -> Response:
    """The pieces of one response of the tiny random checkpoint, through the hf engine."""
    from clover_code.engine.base import ChatRequest
    from clover_code.engine.events import BlockCommitted
    from clover_code.engine.local.hf import HFBackend, HFOptions
    from tests.tiny_model import build_tiny_checkpoint

    with tempfile.TemporaryDirectory() as folder:
        checkpoint = build_tiny_checkpoint(Path(folder) / "ckpt")
        backend = HFBackend(str(checkpoint), HFOptions(block_size=BLOCK, max_tokens=tokens))
        request = ChatRequest([{"role": "user", "content": "Write a function that adds."}])
        blocks: Response = []
        async for event in backend.stream(request):
            if isinstance(event, BlockCommitted):
                if event.pieces is None:
                    raise SystemExit("the hf engine reported no confidences")
                blocks.append(event.pieces)
        return blocks


def _report(name: str, responses: list[Response], targets: Targets) -> None:
    tokens = sum(len(block) for r in responses for block in r)
    compact = _sizes(responses, encode_pieces)
    first = _sizes(responses, first_form)
    nibbles = _sizes(responses, nibbles_deflated)
    print(f"{name}: {len(responses)} response(s), {tokens} tokens (pieces)")
    print(f"  characters per token       whole response  one block of {BLOCK}")
    for label, (whole, block) in (
        ("compact (this tree)", compact),
        ("first form (peer)", first),
        ("nibbles + deflate (info)", nibbles),
    ):
        print(f"  {label:<26} {whole:14.3f} {block:14.3f}")
    for what, new, old, bar in (
        ("a whole response", compact[0], first[0], RESPONSE_TARGET),
        (f"one {BLOCK}-token block", compact[1], first[1], BLOCK_TARGET),
    ):
        targets.check(
            f"{what} <= {bar} characters a token, {name}",
            met=new <= bar,
            figure=f"{new:.3f} vs {old:.3f} in the first form: {new / old:.2f}x",
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tokens", type=int, default=512)
    parser.add_argument("--responses", type=int, default=40)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--no-model", action="store_true", help="skip (a), the tiny checkpoint")
    args = parser.parse_args()
    print(machine_load())
    targets = Targets()
    clover = [_blocks(clover_like_pieces(seed, 500)) for seed in range(args.responses)]
    _check_first_form(clover)
    if args.no_model:
        for what in ("a whole response", f"one {BLOCK}-token block"):
            targets.check(f"{what}, (a) tiny checkpoint", met=None, figure="--no-model")
    else:
        started = time.monotonic()
        tiny = asyncio.run(_tiny_response(args.tokens))
        print(f"(a) decoded in {time.monotonic() - started:.0f} s")
        _report("(a) tiny checkpoint", [tiny], targets)
    _report("(b) Clover-like (synthetic)", clover, targets)
    cpu = _cpu_per_block([block for r in clover for block in r], args.repeats)
    print(f"CPU per {BLOCK}-token block, (b), medians of {args.repeats} (for information):")
    for name, (write, read) in cpu.items():
        print(f"  {name:<11} write {write:7.1f} us  read {read:7.1f} us")
    return targets.exit_status()


if __name__ == "__main__":
    sys.exit(main())
