"""An edit's added lines rated token by token, through the real turn: scripted committed
blocks (their tokens' confidences known) parsed by the real Qwen3 parser, the real
dispatch and edit tools on a repository, in the XML and the JSON call forms."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from clover_code import protocol as p
from clover_code.agent.permissions.approval import ApprovalRequest, Decision
from clover_code.agent.turn.edit_confidence import written_text
from clover_code.config.settings import Settings
from clover_code.protocol.confidence import TokenPiece, decode_pieces, encode_pieces
from tests.diffusion_stream import FakeDiffusionBackend, Token, answer, blocks, expand, tokens
from tests.edit_scripts import (
    JSON_LINES,
    JSON_PIECES,
    THINK,
    XML_LINE,
    XML_PIECES,
    json_write,
    xml_edit,
    xml_param,
)
from tests.sessions import open_session

EDIT = [*THINK, *xml_edit("app.py")]
WRITE = [*THINK, *json_write("greet.py")]


def _codec(pieces: list[tuple[int, float, int]]) -> list[tuple[float, int]]:
    """Per character, what the pieces give once through the compact form (which may
    quantise confidences): the expectation, read as the event's pieces are read."""
    return expand(decode_pieces(encode_pieces([TokenPiece(*piece) for piece in pieces])))


def _row_pieces(diff: str, low: p.EditConfidence, line: str) -> list[tuple[float, int]]:
    row = diff.split("\n").index("+" + line)
    return expand(decode_pieces(low.row_pieces[row]))


async def _run(
    settings: Settings, repo: Path, response: list[list[Token]], **options: Any
) -> list[p.Event]:
    backend = FakeDiffusionBackend([response, answer("Done.")])
    events: list[p.Event] = []
    session = await open_session(settings, backend, repo, events, **options)
    await session.run_turn("fix add")
    await session.close()
    return events


def _finished(events: list[p.Event]) -> tuple[str, p.EditConfidence]:
    finished = next(e for e in events if isinstance(e, p.ToolCallFinished))
    assert finished.status == "ok", finished.result
    assert isinstance(finished.display, p.FileEdit | p.PatchApplied)
    assert finished.low_confidence is not None
    return finished.display.diff, finished.low_confidence


async def test_an_xml_edit_gives_each_added_token_its_confidence(
    make_settings: Callable[..., Settings], repo: Path
) -> None:
    events = await _run(make_settings(max_turns=2), repo, blocks(EDIT))
    assert (repo / "app.py").read_text() == "def add(a, b):\n" + XML_LINE + "\n"
    diff, low = _finished(events)
    assert (low.tokens, low.lines, low.changed) == (2, [2], 6)
    assert _row_pieces(diff, low, XML_LINE) == _codec(XML_PIECES)
    assert len(low.row_pieces) == 1  # the one added line; removed and context lines have none


async def test_a_json_write_finds_its_escaped_lines(
    make_settings: Callable[..., Settings], repo: Path
) -> None:
    events = await _run(make_settings(max_turns=2), repo, blocks(WRITE, size=8))
    assert (repo / "greet.py").read_text() == "\n".join(JSON_LINES) + "\n"
    diff, low = _finished(events)
    # Line 1: \u00e9 and the backslash of \" are low; line 2: the pair's second half.
    assert (low.tokens, low.lines, low.changed) == (3, [1, 2], 13)
    for line, pieces in zip(JSON_LINES, JSON_PIECES, strict=True):
        assert _row_pieces(diff, low, line) == _codec(pieces)


async def test_a_json_patch_of_two_files_keys_each_line_by_its_row(
    make_settings: Callable[..., Settings], repo: Path
) -> None:
    head = '{"name": "apply_patch", "arguments": {"patch": "*** Begin Patch\\n'
    response = [
        *THINK,
        *tokens("<tool_call>", head, "*** Add File: one.py\\n+", "x", " =", (" 1", 0.2), "\\n"),
        *tokens("*** Add File: two.py\\n+", "x", (" =", 0.7), " 2", "\\n"),
        *tokens('*** End Patch"}}', "\n", "</tool_call>"),
    ]
    events = await _run(make_settings(max_turns=2), repo, blocks(response))
    diff, low = _finished(events)
    rows = diff.split("\n")
    assert [rows[row] for row in sorted(low.row_pieces)] == ["+x = 1", "+x = 2"]
    assert (low.tokens, low.lines, low.changed) == (1, [1], 6)
    # Each file keeps its own share: the low token is in one.py's line 1.
    assert {name: (share.tokens, share.lines) for name, share in low.files.items()} == {
        "one.py": (1, [1]),
        "two.py": (0, []),
    }
    assert _row_pieces(diff, low, "x = 1") == _codec([(1, 0.99, 1), (2, 0.99, 1), (2, 0.2, 2)])
    assert _row_pieces(diff, low, "x = 2") == _codec([(1, 0.99, 1), (2, 0.7, 1), (2, 0.99, 1)])


class _Allowing:
    """Allows every call and keeps what it was asked (an approver that shows the diff)."""

    shows_diff = True

    def __init__(self) -> None:
        self.asked: list[ApprovalRequest] = []

    async def request(self, request: ApprovalRequest) -> Decision:
        self.asked.append(request)
        return Decision(allowed=True)


async def test_the_approval_of_an_edit_carries_the_same_pieces(
    make_settings: Callable[..., Settings], repo: Path
) -> None:
    approver = _Allowing()
    events = await _run(
        make_settings(max_turns=2), repo, blocks(EDIT), approver=approver, approval_mode="ask"
    )
    diff, low = _finished(events)
    (asked,) = approver.asked
    assert asked.diff == diff and asked.low_confidence == low
    assert _row_pieces(diff, low, XML_LINE) == _codec(XML_PIECES)


async def test_an_unknown_line_is_left_out_and_the_rest_rated(
    make_settings: Callable[..., Settings], repo: Path
) -> None:
    # The tool writes what the model sent; a blank line and a line made of sure
    # tokens are there too: the blank line is not rated, the sure one is (no low token).
    response = [
        *THINK,
        *tokens("<tool_call>", "\n", "<function=", "write_file", ">\n"),
        *xml_param("path", "new.py"),
        *tokens(
            "<parameter=", "content", ">\n", "a", " =", " 1", "\n", "\n", "b", (" =", 0.3), " 2"
        ),
        *tokens("\n", "</parameter>", "\n", "</function>", "\n", "</tool_call>"),
    ]
    events = await _run(make_settings(max_turns=2), repo, blocks(response))
    diff, low = _finished(events)
    assert (low.tokens, low.lines, low.changed) == (1, [3], 6)
    rows = diff.split("\n")
    assert sorted(rows[row] for row in low.row_pieces) == ["+a = 1", "+b = 2"]


def test_only_the_written_arguments_are_searched() -> None:
    xml = (
        "</think>\n<tool_call>\n<function=edit_file>\n<parameter=old_string>\nx = 1\n"
        "</parameter>\n<parameter=new_string>\nx = 1\n</parameter>\n</function>\n</tool_call>"
    )
    found = written_text(xml, 0, frozenset({"new_string"}))
    assert found.text == "\nx = 1\n" and found.begin[1] == xml.rindex("x = 1")
    assert written_text(xml, 0, frozenset()).text.count("x = 1") == 2
    # A closing tag inside the value is text (as the parser reads it): the value goes on.
    inner = xml.replace(
        "\nx = 1\n</parameter>\n</function>", "\ns = '</parameter>'\n</parameter>\n</function>"
    )
    assert written_text(inner, 0, frozenset({"new_string"})).text == "\ns = '</parameter>'\n"
    arguments = {"old_string": "a\n", "new_string": "b\\\n", "path": "p"}
    raw = "<tool_call>" + json.dumps({"name": "edit_file", "arguments": arguments}) + "</tool_call>"
    found = written_text(raw, 0, frozenset({"new_string"}))
    assert found.text == "b\\\n"
    assert [raw[b:e] for b, e in zip(found.begin, found.end, strict=True)] == ["b", "\\\\", "\\n"]
    broken = "<tool_call>" + '{"name": "edit_file", "arguments": {"new_string": "b\\q"}}'
    assert written_text(broken, 0, frozenset({"new_string"})).text == ""
