"""Rating an edit's added lines by the fill confidences of the tokens that wrote them.

The edit's diff is made by the tool, from arguments the parser read out of
the model's raw text; each added line is found again in the raw text of the
call that made it, in the arguments that hold the text the tool writes
(``Tool.written_arguments``), in order. In the Qwen3 XML form a parameter's
value is the model's text verbatim (the parser only drops one newline at each
end), so a line is found as it stands; in the JSON form the values are
escaped, so they are decoded first, each character keeping the raw span it
came from (``json_offsets``). A line found gives its tokens: how many were
filled below the threshold, and one piece per token run for the shading.
"""

from __future__ import annotations

from clover_code.agent.turn.json_offsets import OffsetText, json_string_values
from clover_code.protocol.confidence import (
    ConfidenceText,
    EditConfidence,
    FileLowConfidence,
    TokenPiece,
    encode_pieces,
)
from clover_code.protocol.diff_rows import added_rows

__all__ = ["call_region", "rate_edit", "written_text"]

_CALL_OPEN, _CALL_CLOSE = "<tool_call>", "</tool_call>"
_PARAM_CLOSE = "</parameter>"
_AFTER_PARAM = ("<parameter=", "</function>")
"""What follows a parameter's real closing tag (the parser's rule: a ``</parameter>``
inside the value is text)."""


def call_region(text: str, index: int) -> tuple[int, int]:
    """The raw text of the ``index``-th tool call of the answer (after the reasoning)."""
    begin = text.rfind("</think>")
    begin = begin + len("</think>") if begin >= 0 else 0
    for _ in range(index + 1):
        found = text.find(_CALL_OPEN, begin)
        if found < 0:
            return (len(text), len(text))
        begin = found + len(_CALL_OPEN)
    end = text.find(_CALL_CLOSE, begin)
    return (begin, end if end >= 0 else len(text))


def written_text(text: str, index: int, written: frozenset[str]) -> OffsetText:
    """The text the ``index``-th call wrote into its ``written`` arguments (all of them
    when empty or none is found), decoded, with each character's raw span."""
    begin, end = call_region(text, index)
    body = text[begin:end]
    if body.lstrip().startswith("{"):
        values = json_string_values(text, begin, end)
        if values is None:
            return OffsetText.verbatim(end, "")  # not JSON: nothing is known
        chosen = [value for key, value in values if key in written]
        return OffsetText.joined(chosen or [value for _, value in values])
    found = (_parameter(text, name, begin, end) for name in written)
    parts = [part for part in found if part is not None]
    parts.sort(key=lambda part: part.begin[0] if part.begin else end)
    return OffsetText.joined(parts) if parts else OffsetText.verbatim(begin, body)


def _parameter(text: str, name: str, begin: int, end: int) -> OffsetText | None:
    """The verbatim value of parameter ``name`` of the XML call in ``text[begin:end]``."""
    tag = f"<parameter={name}>"
    at = text.find(tag, begin, end)
    if at < 0:
        return None
    start = search = at + len(tag)
    while (close := text.find(_PARAM_CLOSE, search, end)) >= 0:
        rest = text[close + len(_PARAM_CLOSE) : end].lstrip()
        if not rest or rest.startswith(_AFTER_PARAM):
            return OffsetText.verbatim(start, text[start:close])
        search = close + len(_PARAM_CLOSE)
    return OffsetText.verbatim(start, text[start:end])


def rate_edit(
    text: ConfidenceText, index: int, diff: str, written: frozenset[str], below: float
) -> EditConfidence | None:
    """The low-confidence tokens of the lines ``diff`` adds, found in order in what the
    ``index``-th call of the response wrote; None when nothing is known."""
    if not text.known:
        return None
    source = written_text(text.text, index, written)
    cursor = low = changed = 0
    lines: list[int] = []
    rows: dict[int, str] = {}
    per_file: dict[str, tuple[int, set[int]]] = {}
    for row, number, line, path in added_rows(diff):
        if not line.strip():
            continue
        at = source.text.find(line, cursor)
        if at < 0:
            continue
        cursor = at + len(line)
        raw_begin, raw_end = source.begin[at], source.end[cursor - 1]
        known = text.known_tokens(raw_begin, raw_end)
        if not known:
            continue
        changed += known
        count = text.low_tokens(raw_begin, raw_end, below)
        file_low, file_lines = per_file.setdefault(path, (0, set()))
        if count:
            low += count
            lines.append(number)
            file_lines.add(number)
            per_file[path] = (file_low + count, file_lines)
        rows[row] = encode_pieces(_pieces(text, source, at, cursor))
    if not changed:
        return None
    # A patch's files each number their lines from 1: a line number is listed once,
    # and each file's own share is kept.
    numbers = sorted(set(lines))
    files = {
        name: FileLowConfidence(tokens=n, lines=sorted(at))
        for name, (n, at) in per_file.items()
        if name and name != "/dev/null"
    }
    return EditConfidence(
        tokens=low, lines=numbers, changed=changed, below=below, files=files, row_pieces=rows
    )


def _pieces(text: ConfidenceText, source: OffsetText, start: int, stop: int) -> list[TokenPiece]:
    """One piece per run of ``source.text[start:stop]`` written by one token; a decoded
    character read from several raw characters (an escape) takes the least sure of
    their tokens, a run no token is known for is sure at step 0."""
    pieces: list[TokenPiece] = []
    token_of, begins, ends = text.token, source.begin, source.end
    run_token, run_chars, run_at = -2, 0, 0
    for i in range(start, stop):
        at = begins[i]
        if ends[i] - at == 1:  # most characters stand for themselves
            token = token_of[at] if at < len(token_of) else -1
        else:
            token, at = _least_sure(text, at, ends[i])
        if token != run_token:
            if run_chars:
                pieces.append(_piece(text, run_token, run_at, run_chars))
            run_token, run_at, run_chars = token, at, 0
        run_chars += 1
    if run_chars:
        pieces.append(_piece(text, run_token, run_at, run_chars))
    return pieces


def _least_sure(text: ConfidenceText, begin: int, end: int) -> tuple[int, int]:
    """The token (-1: none known) of the least sure raw character in ``[begin, end)``,
    and that character's offset."""
    best, best_at = -1, begin
    lowest = 2.0
    for at in range(begin, min(end, len(text.text))):
        confidence = text.confidence[at]
        if text.token[at] >= 0 and confidence is not None and confidence < lowest:
            best, best_at, lowest = text.token[at], at, confidence
    return best, best_at


def _piece(text: ConfidenceText, token: int, at: int, chars: int) -> TokenPiece:
    if token < 0:
        return TokenPiece(chars, 1.0, 0)
    confidence = text.confidence[at]
    return TokenPiece(chars, 1.0 if confidence is None else confidence, text.steps[at])
