"""The compact form of fill confidences: lossless for lengths and steps, confidences
within half a level, the first form still read, bad strings refused in one sentence,
and about one byte per token on a Clover-like sample."""

from __future__ import annotations

import base64
import json
import math
import random

import pytest

from clover_code.agent.transcript import load
from clover_code.protocol.confidence import TokenPiece, decode_pieces, encode_pieces
from clover_code.protocol.confidence_codec import LEVELS, TAG, level
from tests.confidence_samples import clover_like_pieces
from tests.paths import UNIT_FIXTURES

FIRST_FORM = UNIT_FIXTURES / "transcripts" / "confidence_first_form"
HALF_LEVEL = 0.5 / LEVELS


def _random_pieces(rng: random.Random, count: int) -> list[TokenPiece]:
    return [
        TokenPiece(rng.randint(1, 1000), rng.random(), rng.randint(0, 300)) for _ in range(count)
    ]


def _assert_round_trip(pieces: list[TokenPiece]) -> None:
    back = decode_pieces(encode_pieces(pieces))
    assert [(p.chars, p.step) for p in back] == [(p.chars, p.step) for p in pieces]
    for got, sent in zip(back, pieces, strict=True):
        assert abs(got.confidence - sent.confidence) <= HALF_LEVEL + 1e-12, (got, sent)


@pytest.mark.parametrize("seed", range(12))
def test_random_pieces_round_trip(seed: int) -> None:
    rng = random.Random(seed)
    _assert_round_trip(_random_pieces(rng, rng.choice([1, 2, 7, 32, 100, 600])))


def test_runs_extremes_and_empty_pieces_round_trip() -> None:
    _assert_round_trip([TokenPiece(1, 1.0, 1)] * 3000)
    _assert_round_trip([TokenPiece(1, 0.0, 300 - k % 300) for k in range(700)])
    _assert_round_trip(
        [TokenPiece(0, 0.5, 2), TokenPiece(10**6, 0.999, 10**5), TokenPiece(1, 0.0, 0)]
    )
    assert encode_pieces([]) == "" and decode_pieces("") == []


def test_out_of_range_confidences_and_steps_are_clamped() -> None:
    back = decode_pieces(encode_pieces([TokenPiece(2, math.nan, -4), TokenPiece(3, 1.5, 1)]))
    assert [(p.chars, p.confidence, p.step) for p in back] == [(2, 0.025, 0), (3, 0.975, 1)]


def test_thresholds_at_multiples_of_a_level_sort_tokens_as_the_raw_confidence() -> None:
    rng = random.Random(7)
    confidences = [rng.random() for _ in range(2000)] + [k / LEVELS for k in range(LEVELS + 1)]
    confidences += [math.nextafter(k / LEVELS, 0.0) for k in range(1, LEVELS + 1)]
    back = decode_pieces(encode_pieces([TokenPiece(1, c, 1) for c in confidences]))
    # every multiple of 0.05 up to 0.95 (1.0 is no edge: the top level holds 1.0 itself)
    for threshold in [k / LEVELS for k in range(LEVELS)] + [0.5, 0.9, 0.95]:
        below = [c < threshold for c in confidences]
        assert [p.confidence < threshold for p in back] == below, threshold
    assert level(0.95) == LEVELS - 1 and level(math.nextafter(0.95, 0.0)) == LEVELS - 2


def test_the_first_form_still_decodes() -> None:
    # base64 of (confidence 0..255, step, length) per token, as written before
    old = base64.b64encode(bytes([255, 3, 4, 128, 255, 255, 0, 1, 2])).decode()
    assert not old.startswith(TAG)
    assert decode_pieces(old) == [
        TokenPiece(4, 1.0, 3),
        TokenPiece(255, 128 / 255, 255),
        TokenPiece(2, 0.0, 1),
    ]


def test_a_recorded_first_form_transcript_loads_with_its_confidences() -> None:
    loaded = load(FIRST_FORM.with_suffix(".jsonl"))
    expected = json.loads(FIRST_FORM.with_suffix(".pieces.json").read_text())
    answers = [i for i, m in enumerate(loaded.messages) if m["role"] == "assistant"]
    assert sorted(loaded.answer_confidence) == answers
    for index, pieces in zip(answers, expected, strict=True):
        decoded = decode_pieces(loaded.answer_confidence[index])
        assert [[p.chars, p.confidence, p.step] for p in decoded] == pieces
        content = loaded.messages[index]["content"]
        assert isinstance(content, str) and sum(p.chars for p in decoded) == len(content)


@pytest.mark.parametrize(
    ("text", "sentence"),
    [
        ('~abc"', "the confidence string is not base85 after its '~': "),
        ("~é", "the confidence string is not base85 after its '~': "),
        ("~00000000", "the confidence string has bytes after its last token: it is corrupt"),
        ("@@@@", "the confidence string is neither the compact form (starting '~') nor base64: "),
        ("AAAAAA==", "the confidence string's first form must hold three bytes per token"),
    ],
)
def test_bad_strings_are_refused_in_one_sentence(text: str, sentence: str) -> None:
    with pytest.raises(ValueError) as info:
        decode_pieces(text)
    assert str(info.value).startswith(sentence) and "\n" not in str(info.value)


def test_a_string_claiming_more_tokens_than_it_can_hold_is_refused() -> None:
    honest = encode_pieces([TokenPiece(1, 1.0, 1)] * 100_000)  # the most a byte holds
    assert len(decode_pieces(honest)) == 100_000
    # a stream whose first bits say "2^40 pieces" (all-ones unary, then ones)
    claim = TAG + base64.b85encode(b"\xff" * 8).decode()
    with pytest.raises(ValueError, match="more than its 8 bytes can hold: it is corrupt"):
        decode_pieces(claim)


def test_random_strings_never_raise_anything_but_the_sentence() -> None:
    rng = random.Random(3)
    alphabet = (
        "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz!#$%&()*+-;<=>?@^_`{|}~"
    )
    refused = 0
    for _ in range(500):
        text = TAG + "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 60)))
        try:
            decode_pieces(text)
        except ValueError as exc:
            refused += 1
            assert str(exc).startswith("the confidence string ")
    assert refused > 350  # most garbage is caught; the rest decodes to pieces callers check


def _first_form_chars(pieces: list[TokenPiece]) -> int:
    """What the first form took: four characters per token, a token over 255 split."""
    return sum(4 * max(1, math.ceil(p.chars / 255)) for p in pieces)


def test_about_one_byte_per_token_on_a_clover_like_sample() -> None:
    responses = [clover_like_pieces(seed, 500) for seed in range(8)]
    tokens = sum(len(r) for r in responses)
    answer = sum(len(encode_pieces(r)) for r in responses) / tokens
    blocks = [r[at : at + 32] for r in responses for at in range(0, 500, 32)]
    block = sum(len(encode_pieces(b)) for b in blocks) / tokens
    first = sum(_first_form_chars(r) for r in responses) / tokens
    # measured 0.90 and 1.06 characters a token (the first form: 4.0)
    assert answer <= 1.05 and block <= 1.2, (answer, block)
    assert answer <= first / 3.5 and block <= first / 3
