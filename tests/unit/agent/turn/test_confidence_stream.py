"""Fill confidences from a scripted ``clover-code serve`` draft stream, through the
remote client's decoder and the turn's ``ResponseConfidence``: the exact pieces of
the answer (as they stream, block by block, and at the end) and the exact counts and
lines of an edit; and the one notice when an engine reports none."""

from __future__ import annotations

import json
from typing import Any

import pytest

from clover_code import protocol
from clover_code.agent.turn.confidence import NoConfidenceNotice, ResponseConfidence
from clover_code.engine import events as ev
from clover_code.engine.remote.chunks import ChunkDecoder
from clover_code.protocol.confidence import (
    NO_CONFIDENCE,
    TokenPiece,
    decode_pieces,
    encode_pieces,
)
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


Shade = list[tuple[int, int]]


def _shades(pieces: list[TokenPiece]) -> Shade:
    """Each piece's length and confidence level (the compact form keeps levels of 0.05)."""
    return [(piece.chars, level(piece.confidence)) for piece in pieces]


def _levels(*pieces: tuple[int, float]) -> Shade:
    return [(chars, level(confidence)) for chars, confidence in pieces]


def _streamed(events: list[ev.EngineEvent]) -> tuple[list[str | Shade], ResponseConfidence]:
    """The events' kinds in order, each followed by the answer pieces it let the turn
    send while streaming (as lengths and confidences)."""
    confidence = ResponseConfidence(below=0.5)
    out: list[str | Shade] = []
    for event in events:
        shade = None
        if isinstance(event, ev.BlockCommitted):
            shade = confidence.committed(event)
        elif isinstance(event, ev.ContentDelta):
            shade = confidence.content(event)
        out.append(type(event).__name__)
        if shade is not None:
            out.append(_shades(decode_pieces(shade.confidence)))
    return out, confidence


def _final(confidence: ResponseConfidence) -> Shade:
    answer = confidence.answer_event()
    assert answer is not None
    return _shades(decode_pieces(answer.confidence))


def test_the_answers_pieces_stream_as_each_block_commits() -> None:
    # A clover-code serve stream: the block's raw text comes before its parsed text, so
    # the pieces of "Sure, done." go out as soon as its block commits, before the end.
    out, confidence = _streamed(_events())
    shades = [item for item in out if isinstance(item, list)]
    assert shades == [_levels((4, 0.99), (2, 0.97), (4, 0.4), (1, 0.99))]  # the call: no answer
    first = out.index(shades[0])
    assert out[first - 1] == "BlockCommitted"
    assert "BlockCommitted" in out[first:]  # before the call's block
    assert _final(confidence) == shades[0]


def test_text_found_after_its_block_streams_at_once_and_the_whole_is_the_same() -> None:
    # A local engine commits a block, then the parser's text of it follows.
    blocks = [
        [("Hello", 0.99), (" wor", 0.3), ("ld", 0.8)],
        [(".\n\n", 0.99), ("Bye", 0.6)],
    ]
    events: list[ev.EngineEvent] = []
    for number, parts in enumerate(blocks):
        pieces = [TokenPiece(len(t), c, 1) for t, c in parts]
        text = "".join(t for t, _ in parts)
        events += [ev.BlockCommitted(number, text, len(parts), 1, pieces=pieces)]
        events += [ev.ContentDelta(text[:3]), ev.ContentDelta(text[3:])]
    out, confidence = _streamed(events)
    kinds = [item if isinstance(item, str) else "shade" for item in out]
    assert kinds == ["BlockCommitted", *["ContentDelta", "shade"] * 2] * 2  # each at once
    streamed = [piece for item in out if isinstance(item, list) for piece in item]
    assert streamed == _levels((3, 0.99), (2, 0.99), (4, 0.3), (2, 0.8), (3, 0.99), (3, 0.6))
    assert _final(confidence) == streamed


def test_a_delta_not_found_holds_the_rest_back_and_counts_as_sure_at_the_end() -> None:
    confidence = ResponseConfidence(below=0.5)
    pieces = [TokenPiece(3, 0.2, 1), TokenPiece(3, 0.9, 1)]
    assert confidence.committed(ev.BlockCommitted(0, "abcdef", 2, 1, pieces=pieces)) is None
    assert confidence.content(ev.ContentDelta("xyz")) is None  # not in the raw text
    assert confidence.content(ev.ContentDelta("abc")) is None  # waits behind it
    assert _final(confidence) == _levels((3, 1.0), (3, 0.2))


def test_no_confidences_streams_nothing_and_the_notice_is_said_once() -> None:
    said: list[protocol.Event] = []
    notice = NoConfidenceNotice(said.append)
    for _ in range(3):  # three responses of an engine that reports none
        confidence = ResponseConfidence(below=0.5)
        assert confidence.committed(ev.BlockCommitted(0, "Hi there", 2)) is None
        assert confidence.content(ev.ContentDelta("Hi there")) is None
        assert confidence.answer_event() is None
        notice.response_ended(confidence)
    assert said == [protocol.Notice(level="warning", text=NO_CONFIDENCE)]


def test_the_notice_waits_for_a_response_that_committed_blocks() -> None:
    said: list[protocol.Event] = []
    notice = NoConfidenceNotice(said.append)
    notice.response_ended(ResponseConfidence(below=0.5))  # a request that failed at once
    with_them = ResponseConfidence(below=0.5)
    with_them.committed(ev.BlockCommitted(0, "ok", 1, 1, pieces=[TokenPiece(2, 0.9, 1)]))
    notice.response_ended(with_them)  # an engine that reports them: nothing to say
    assert said == []
