"""Fill confidences on the real in-process engine (a tiny random stand-in checkpoint),
from the decoder to the protocol events and the headless JSON result.

The model's logits are scripted so that the tokens of one line of the file it
writes are filled with probability 0.3 and every other token with 0.99.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from clover_code import protocol as p
from clover_code.config.settings import Settings
from clover_code.engine.local.hf import HFBackend, HFOptions
from clover_code.headless.record import RunRecord
from clover_code.protocol.confidence import decode_pieces
from tests.sessions import open_session
from tests.tiny_model import build_tiny_checkpoint, script_text

ANSWER = "I wrote it.</think>\n\nDone: notes.txt has three lines."
CALL = (
    "\n\n<tool_call>\n<function=write_file>\n<parameter=path>\nnotes.txt\n</parameter>\n"
    "<parameter=content>\nalpha\nbeta\ngamma\n</parameter>\n</function>\n</tool_call>"
)


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_checkpoint(tmp_path_factory.mktemp("tiny") / "ckpt")


async def test_confidences_reach_the_edit_and_the_json_result(
    checkpoint: Path, make_settings: Callable[..., Settings], repo: Path
) -> None:
    backend = HFBackend(str(checkpoint), HFOptions(block_size=8, max_tokens=400))
    text = ANSWER + CALL

    def count(part: str) -> int:
        return len(backend.tokenizer(part, add_special_tokens=False)["input_ids"])

    # The byte-level tokenizer (tags are single tokens): "beta" is four tokens, filled unsure.
    start = count(text[: text.index("beta")])
    unsure = range(start, start + 4)
    assert count(text[: text.index("beta") + 4]) == start + 4
    script_text(backend, text, confidence=lambda i: 0.3 if i in unsure else 0.99)
    events: list[p.Event] = []
    session = await open_session(make_settings(max_turns=1), backend, repo, events)
    await session.run_turn("write notes")
    await session.close()
    record = RunRecord()
    for event in events:
        record(event)

    blocks = [e for e in events if isinstance(e, p.BlockCommitted)]
    pieces = [piece for b in blocks for piece in decode_pieces(b.confidence or "")]
    assert sum(piece.chars for piece in pieces) == len(text)
    low = [piece for piece in pieces if piece.confidence < 0.5]
    # (what the rule saw: the penalties of the checkpoint's settings lower it a little)
    assert len(low) == 4 and all(0.2 < piece.confidence <= 0.31 for piece in low)
    assert all(piece.step >= 1 for piece in pieces)

    finished = next(e for e in events if isinstance(e, p.ToolCallFinished))
    assert finished.low_confidence is not None
    assert (finished.low_confidence.tokens, finished.low_confidence.lines) == (4, [2])
    assert finished.low_confidence.changed == len("alphabetagamma")

    answer = next(e for e in events if isinstance(e, p.AnswerConfidence))
    assert all(piece.confidence > 0.9 for piece in decode_pieces(answer.confidence))

    result = record.result(status="limit", exit_code=4, error=None, version="t", duration_s=0.0)
    assert [e.model_dump() for e in result.edits] == [
        {
            "path": "notes.txt",
            "low_confidence_tokens": 4,
            "low_confidence_lines": [2],
            "confidence_known": True,
        }
    ]


async def test_a_re_denoised_token_keeps_its_last_fill(checkpoint: Path) -> None:
    from clover_code.engine.base import ChatRequest
    from clover_code.engine.events import BlockCommitted

    text = "ok</think>\n\nalpha beta gamma"

    async def unsure_steps(**options: Any) -> list[int]:
        backend = HFBackend(str(checkpoint), HFOptions(block_size=8, max_tokens=64, **options))
        start = len(backend.tokenizer(text[: text.index("beta")])["input_ids"])
        script_text(backend, text, confidence=lambda i: 0.3 if start <= i < start + 4 else 0.99)
        request = ChatRequest([{"role": "user", "content": "hi"}])
        blocks = [e async for e in backend.stream(request) if isinstance(e, BlockCommitted)]
        pieces = [piece for b in blocks for piece in b.pieces or []]
        assert sum(piece.chars for piece in pieces) == len(text)
        return [piece.step for piece in pieces if piece.confidence < 0.5]

    plain = await unsure_steps()
    again = await unsure_steps(remask_below=0.5, remask_rounds=1)
    # Masked again after the block's first full denoise and filled anew: the step of
    # the second fill is kept, later than the first.
    assert len(plain) == len(again) == 4
    assert all(a > b for a, b in zip(again, plain, strict=True)), (plain, again)
