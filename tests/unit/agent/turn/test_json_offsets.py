"""The JSON string scanner: each decoded character's raw span, escapes and surrogate pairs
included, and text that is not JSON read as nothing (never an exception)."""

from __future__ import annotations

import json
import random

import pytest

from clover_code.agent.turn.json_offsets import OffsetText, json_string_values


def _spans(raw: str, text: OffsetText) -> list[str]:
    return [raw[b:e] for b, e in zip(text.begin, text.end, strict=True)]


def test_each_escape_keeps_its_raw_span() -> None:
    raw = r'{"k": "a\"b\\c\/d\n\t\r\b\fé\u00e9\ud83d\ude00😀"}'
    ((key, value),) = json_string_values(raw) or []
    assert key == "k" and value.text == json.loads(raw)["k"]
    assert _spans(raw, value) == [
        "a", '\\"', "b", "\\\\", "c", "\\/", "d", "\\n", "\\t", "\\r", "\\b", "\\f",
        "é", "\\u00e9", "\\ud83d\\ude00", "😀",
    ]  # fmt: skip


def test_lone_surrogates_stay_one_character_each() -> None:
    raw = r'["\ud800x", "\udc00", "\ud800\u0041", "\ud83d\ud83d\ude00"]'
    values = [value for _, value in json_string_values(raw) or []]
    assert [v.text for v in values] == json.loads(raw)
    assert _spans(raw, values[2]) == ["\\ud800", "\\u0041"]
    assert _spans(raw, values[3]) == ["\\ud83d", "\\ud83d\\ude00"]


@pytest.mark.parametrize("ascii_only", [True, False])
def test_random_strings_decode_as_json_loads_reads_them(ascii_only: bool) -> None:
    rng = random.Random(30)
    alphabet = ['"', "\\", "/", "\n", "\t", "\x00", "\x1f", "a", " ", "é", "€", "😀", "\ud800"]
    for _ in range(200):
        strings = ["".join(rng.choices(alphabet, k=rng.randint(0, 12))) for _ in range(3)]
        raw = json.dumps({"a": strings[0], "b": [strings[1], 7, None], "c": {"d": strings[2]}},
                         ensure_ascii=ascii_only)  # fmt: skip
        values = json_string_values(raw)
        assert values is not None
        assert [(k, v.text) for k, v in values] == [("a", strings[0]), ("b", strings[1]),
                                                     ("d", strings[2])]  # fmt: skip
        for _, value in values:
            for char, span in zip(value.text, _spans(raw, value), strict=True):
                assert json.loads(f'"{span}"') == char


def test_keys_are_not_values_and_arguments_sent_as_a_string_are_read_too() -> None:
    inner = {"path": "a.py", "content": 'x = "1"\ny'}
    raw = json.dumps({"name": "write_file", "arguments": json.dumps(inner)})
    values = json_string_values(raw) or []
    assert [k for k, _ in values] == ["name", "arguments", "path", "content"]
    content = values[-1][1]
    assert content.text == inner["content"]
    # Encoded twice: a quote of the file is three escapes deep in the raw text.
    assert _spans(raw, content)[4:6] == ['\\\\\\"', "1"]
    assert _spans(raw, content)[7] == "\\\\n"


@pytest.mark.parametrize(
    "raw",
    [
        '{"a": "cut off',
        '{"a": "bad \\q escape"}',
        '{"a": "\\u12"}',
        '{"a": "\\ud83d\\ude"}',
        '{"a": "\\',
        '{"a": [1}',
        '{"a": 1]]',
        '{"a": 1',
        '{"a": call()}',
        "<function=edit_file>",
    ],
)
def test_text_that_is_not_json_is_nothing(raw: str) -> None:
    assert json_string_values(raw) is None


def test_joined_texts_never_share_a_line() -> None:
    raw = '["ab", "cd"]'
    joined = OffsetText.joined(v for _, v in json_string_values(raw) or [])
    assert joined.text == "ab\ncd" and joined.text.find("bc") < 0
    assert _spans(raw, joined) == ["a", "b", "", "c", "d"]
