"""Fill confidences from a scripted ``clover-code serve`` draft stream, through the
remote client's decoder and the turn's ``ResponseConfidence``: the exact pieces of
the answer and the exact counts and lines of an edit."""

from __future__ import annotations

import json
from typing import Any

import pytest

from clover_code.agent.turn.confidence import ResponseConfidence
from clover_code.engine import events as ev
from clover_code.engine.remote.chunks import ChunkDecoder
from clover_code.protocol.confidence import TokenPiece, decode_pieces, encode_pieces
from clover_code.protocol.confidence_codec import level


def _draft(block: int) -> dict[str, Any]:
    draft = {"block": block, "step": 1, "tokens": ["x"], "masked": [False], "confidences": [1.0]}
    return {"choices": [], "clover_draft": draft}


def _block(parts: list[tuple[str, float]]) -> dict[str, Any]:
    """A clover_block of one token per part, filled at step 1 or (unsure ones) 2."""
    pieces = [TokenPiece(len(t), c, 1 if c >= 0.5 else 2) for t, c in parts]
    text = "".join(t for t, _ in parts)
    return {"choices": [], "clover_block": {"text": text, "confidence": encode_pieces(pieces)}}


def _delta(**delta: Any) -> dict[str, Any]:
    return {"choices": [{"delta": delta}]}


def _events() -> list[ev.EngineEvent]:
    decoder = ChunkDecoder(block_size=32, raw_parsing="never")
    arguments = json.dumps({"path": "a.py", "content": "x = 1\ny = 2\n"})
    call = {"index": 0, "id": "c1", "function": {"name": "write_file", "arguments": arguments}}
    chunks = [
        _draft(0),
        _block([("Sure", 0.99), (", ", 0.97), ("done", 0.4), (".", 0.99)]),
        _delta(content="Sure, done."),
        _draft(1),
        _block(
            [
                ("<tool_call>\n<function=write_file>\n<parameter=path>\na.py\n</parameter>\n", 1.0),
                ("<parameter=content>\n", 1.0),
                ("x = ", 0.9),
                ("1", 0.2),
                ("\ny", 0.99),
                (" = 2", 0.3),
                ("\n</parameter>\n</function>\n</tool_call>", 1.0),
            ]
        ),
        _delta(tool_calls=[call]),
        {"choices": [{"delta": {}, "finish_reason": "tool_calls"}]},
    ]
    events: list[ev.EngineEvent] = []
    for chunk in chunks:
        events += decoder.feed(chunk)
    return events + decoder.finish()


def test_a_draft_stream_gives_the_answers_pieces_and_the_edits_counts() -> None:
    confidence = ResponseConfidence(below=0.5)
    raters = []
    for event in _events():
        if isinstance(event, ev.BlockCommitted):
            assert event.pieces is not None and event.steps == 1
            confidence.committed(event)
        elif isinstance(event, ev.ContentDelta):
            confidence.content(event)
        elif isinstance(event, ev.ToolCallEnd):
            raters.append(confidence.call())
    answer = confidence.answer_event()
    assert answer is not None
    shades = [(p.chars, level(p.confidence), p.step) for p in decode_pieces(answer.confidence)]
    # levels of 0.05: 0.99 and 0.97 are both in the top one (19), 0.4 in [0.4, 0.45)
    assert shades == [(4, 19, 1), (2, 19, 1), (4, 8, 2), (1, 19, 1)]
    (rater,) = raters
    diff = "--- /dev/null\n+++ b/a.py\n@@ -0,0 +1,2 @@\n+x = 1\n+y = 2\n"
    rated = rater.rate(diff)
    assert rated is not None
    # "1" on line 1; " = 2" on line 2, and "\ny" (which starts line 2's text) is sure.
    assert (rated.tokens, rated.lines, rated.changed) == (2, [1, 2], 4)


def test_a_stream_without_confidences_rates_nothing() -> None:
    confidence = ResponseConfidence(below=0.5)
    confidence.committed(ev.BlockCommitted(0, "<tool_call>x</tool_call>", 5))
    assert confidence.answer_event() is None
    assert confidence.call().rate("@@ -1 +1 @@\n+x\n") is None


@pytest.mark.parametrize(
    "confidence",
    [
        "~" + "0" * 10,  # refused by decode_pieces (bytes after its last token)
        "not base64!",  # refused too
        encode_pieces([TokenPiece(2, 0.9, 1)]),  # read, but does not cover the block's text
    ],
)
def test_a_bad_clover_block_leaves_the_confidences_unknown(confidence: str) -> None:
    decoder = ChunkDecoder(block_size=32, raw_parsing="never")
    chunks = [
        _draft(0),
        {"choices": [], "clover_block": {"text": "Sure.", "confidence": confidence}},
        _delta(content="Sure."),
        {"choices": [{"delta": {}, "finish_reason": "stop"}]},
    ]
    events = [e for chunk in chunks for e in decoder.feed(chunk)] + decoder.finish()
    (block,) = [e for e in events if isinstance(e, ev.BlockCommitted)]
    assert block.text == "Sure." and block.pieces is None
    response = ResponseConfidence(below=0.5)
    response.committed(block)
    response.content(ev.ContentDelta("Sure."))
    assert response.answer_event() is None
