"""Fill confidences of committed tokens: their compact form and where they lie in the text.

A block-diffusion model fills each position of a block with some probability
at some denoising step. A committed block's text is cut into pieces, one per
token (a character split over several byte tokens is one piece), and each
piece keeps its fill confidence, the step that filled it and its length in
characters. On the wire and in the transcript the pieces are one compact
string of about one byte per token (``confidence_codec.py``: the confidence in
levels of 0.05, step and length exact), made and read by ``encode_pieces`` and
``decode_pieces``.

``ConfidenceText`` gathers a response's committed blocks into its raw text
with a confidence per character; ``locate`` finds a piece of parsed output
(an answer delta, a line of an edit's new text) in it, so what the parser
made of the text still knows which tokens it came from.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict

from clover_code.protocol.confidence_codec import TokenPiece, decode_pieces, encode_pieces

__all__ = [
    "LOW_CONFIDENCE",
    "ConfidenceText",
    "EditConfidence",
    "TokenPiece",
    "added_lines",
    "decode_pieces",
    "encode_pieces",
]

LOW_CONFIDENCE = 0.5
"""Below this a token counts as filled with low confidence (the setting's default)."""


class EditConfidence(BaseModel):
    """The low-confidence tokens of an edit: how many, and the new file's lines holding them."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    tokens: int
    """Changed tokens filled below the threshold."""
    lines: list[int]
    """1-based line numbers (in the file after the edit) holding them, ascending."""
    changed: int
    """Changed tokens whose confidence is known."""
    below: float
    """The threshold they were filled below."""


class ConfidenceText:
    """A response's raw text with each character's fill confidence (None: not known)."""

    def __init__(self) -> None:
        self.text = ""
        self.confidence: list[float | None] = []
        self.steps: list[int] = []
        """Per character, the step its token was filled at (0: not known)."""
        self.token: list[int] = []
        """Per character, the number of the token it belongs to (-1: not known)."""
        self.tokens = 0
        self.known = False
        """Some block carried confidences."""

    def add(self, text: str, pieces: Sequence[TokenPiece] | None) -> None:
        """Append a committed block's text and its pieces (which cover it, or not at all)."""
        confs: list[float | None] = []
        tokens: list[int] = []
        steps: list[int] = []
        if pieces is not None and sum(p.chars for p in pieces) == len(text):
            self.known = True
            for piece in pieces:
                confs += [piece.confidence] * piece.chars
                tokens += [self.tokens] * piece.chars
                steps += [piece.step] * piece.chars
                self.tokens += 1
        else:
            confs = [None] * len(text)
            tokens = [-1] * len(text)
            steps = [0] * len(text)
        self.text += text
        self.confidence += confs
        self.token += tokens
        self.steps += steps

    def locate(self, part: str, start: int = 0) -> int:
        """Where ``part`` begins in the raw text at or after ``start`` (-1: not found)."""
        return self.text.find(part, start) if part else -1

    def low_tokens(self, begin: int, end: int, below: float) -> int:
        """Tokens overlapping text[begin:end] filled below ``below``."""
        seen = {
            self.token[i]
            for i in range(max(0, begin), min(end, len(self.text)))
            if self.token[i] >= 0 and (self.confidence[i] or 0.0) < below
        }
        return len(seen)

    def known_tokens(self, begin: int, end: int) -> int:
        """Tokens with a known confidence overlapping text[begin:end]."""
        return len({t for t in self.token[max(0, begin) : end] if t >= 0})

    def call_region(self, index: int) -> tuple[int, int]:
        """The raw text of the ``index``-th tool call of the answer (after the reasoning)."""
        begin = self.text.rfind("</think>")
        begin = begin + len("</think>") if begin >= 0 else 0
        for _ in range(index + 1):
            found = self.text.find("<tool_call>", begin)
            if found < 0:
                return (len(self.text), len(self.text))
            begin = found + len("<tool_call>")
        end = self.text.find("</tool_call>", begin)
        return (begin, end if end >= 0 else len(self.text))

    def edit_confidence(
        self, index: int, added: Sequence[tuple[int, str]], below: float
    ) -> EditConfidence | None:
        """The low-confidence tokens of the ``index``-th call's added lines (line number,
        text), found in order inside the call's raw text; None when nothing is known."""
        if not self.known:
            return None
        begin, end = self.call_region(index)
        cursor = begin
        low = changed = 0
        lines: list[int] = []
        for number, line in added:
            if not line.strip():
                continue
            at = self.text.find(line, cursor, end)
            if at < 0:
                continue
            cursor = at + len(line)
            changed += self.known_tokens(at, cursor)
            count = self.low_tokens(at, cursor, below)
            if count:
                low += count
                lines.append(number)
        if not changed:
            return None
        return EditConfidence(tokens=low, lines=lines, changed=changed, below=below)


def added_lines(diff: str) -> list[tuple[int, str]]:
    """The lines a unified diff adds, each with its 1-based number in the new file."""
    out: list[tuple[int, str]] = []
    number = 0
    for line in diff.splitlines():
        if line.startswith("@@"):
            head = line.split("+", 1)[1].split(" ", 1)[0] if "+" in line else "1"
            number = int(head.split(",", 1)[0] or 1)
        elif number == 0:
            continue  # the file header, before the first hunk
        elif line.startswith("+"):
            out.append((number, line[1:]))
            number += 1
        elif line.startswith(" "):
            number += 1
    return out
