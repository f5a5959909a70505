"""The headless result carries any bytes: file names and patches that are not UTF-8.

Undecodable bytes reach the result as lone surrogates (``surrogateescape``);
each field escapes them as ``\\xNN``, and a result that still cannot be
written becomes an error result rather than a traceback.
"""

from __future__ import annotations

import io
import json

import pytest

from clover_code.headless.ending import write_result
from clover_code.headless.render import OutputFormat
from clover_code.outcome.result import ResultUsage, TaskResult
from clover_code.protocol.json_text import printable, printable_value

NAME = b"n\xffm\xc3.txt".decode("utf-8", "surrogateescape")


def _result(**fields: object) -> TaskResult:
    base: dict[str, object] = {
        "status": "success",
        "exit_code": 0,
        "result": "done",
        "error": None,
        "warnings": [],
        "session_id": "s1",
        "transcript": "/t/s1.jsonl",
        "version": "0",
        "duration_s": 1.0,
        "turns": 1,
        "tool_calls": 0,
        "usage": ResultUsage(),
    }
    return TaskResult.model_validate(base | fields)


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("plain", "plain"),
        ("café ✓", "café ✓"),
        (NAME, "n\\xffm\\xc3.txt"),
        (b"\xed\xa0\x80".decode("utf-8", "surrogateescape"), "\\xed\\xa0\\x80"),
        ("lone \ud800 high", "lone \ufffd high"),
        ("lone \udfff low", "lone \ufffd low"),
    ],
)
def test_printable(text: str, shown: str) -> None:
    assert printable(text) == shown
    json.dumps(shown, ensure_ascii=False).encode("utf-8")


def test_printable_value_walks_json_values() -> None:
    value = {NAME: [NAME, 1, None, {"k": NAME}]}
    escaped = "n\\xffm\\xc3.txt"
    assert printable_value(value) == {escaped: [escaped, 1, None, {"k": escaped}]}


def test_every_text_field_of_the_result_escapes() -> None:
    patch = f"+++ b/{NAME}\n+a{NAME}\n"
    result = _result(
        result=NAME,
        warnings=[NAME],
        patch=patch,
        files_changed=[NAME, "ok.py"],
        structured_output={"name": NAME},
        transcript=f"/home/{NAME}/s1.jsonl",
    )
    data = json.loads(result.model_dump_json())
    assert data["files_changed"] == ["n\\xffm\\xc3.txt", "ok.py"]
    assert data["patch"] == "+++ b/n\\xffm\\xc3.txt\n+an\\xffm\\xc3.txt\n"
    assert data["result"] == data["warnings"][0] == "n\\xffm\\xc3.txt"
    assert data["structured_output"] == {"name": "n\\xffm\\xc3.txt"}


@pytest.mark.parametrize("output_format", ["json", "stream-json"])
def test_a_result_that_cannot_be_written_becomes_an_error_result(
    output_format: OutputFormat,
) -> None:
    # Built without validation, as a future field that escapes nothing would be.
    broken = _result().model_copy(update={"result": "x\udcff"})
    out = io.StringIO()
    code = write_result(output_format, out, broken)
    (line,) = out.getvalue().splitlines()
    data = json.loads(line)
    assert code == 1
    assert data["type"] == "result" and data["status"] == "error" and data["exit_code"] == 1
    assert data["error"].startswith("the run's result could not be written as JSON")
    assert data["session_id"] == "s1" and data["transcript"] == "/t/s1.jsonl"
