"""The fill confidences of one model response, carried past the parser.

The engine's committed blocks hold the raw text and each token's confidence;
the parser turns that text into answer deltas and tool calls. ``ResponseConfidence``
keeps the raw text with a confidence per character, finds each answer delta
in it (in order), and rates an edit's added lines inside the raw text of the
call that made it (``edit_confidence``), so a diff line knows its tokens'
confidences.
"""

from __future__ import annotations

from clover_code import protocol as p
from clover_code.agent.turn.edit_confidence import rate_edit
from clover_code.engine import events as ev
from clover_code.protocol.confidence import (
    ConfidenceText,
    EditConfidence,
    TokenPiece,
    encode_pieces,
)

__all__ = ["EditRater", "ResponseConfidence"]


class EditRater:
    """Rates the diff of one tool call of a response by its tokens' fill confidences."""

    def __init__(self, text: ConfidenceText, index: int, below: float) -> None:
        self.text = text
        self.index = index
        self.below = below

    def rate(self, diff: str, written: frozenset[str] = frozenset()) -> EditConfidence | None:
        """The low-confidence tokens of the lines ``diff`` adds, and each one's pieces,
        looked for in the call's ``written`` arguments (all: empty); None: not known."""
        return rate_edit(self.text, self.index, diff, written, self.below)


class ResponseConfidence:
    """One response's raw text and confidences, and its answer text found in it."""

    def __init__(self, below: float) -> None:
        self.below = below
        self.text = ConfidenceText()
        self.answer: list[str] = []
        self.calls = 0

    def committed(self, block: ev.BlockCommitted) -> None:
        """A committed block: its raw text and pieces."""
        self.text.add(block.text, block.pieces)

    def content(self, delta: ev.ContentDelta) -> None:
        """Answer text, located in the raw text when the response ends."""
        self.answer.append(delta.text)

    def call(self) -> EditRater:
        """A tool call ended: the rater of its edits (which rates None if nothing is known)."""
        index, self.calls = self.calls, self.calls + 1
        return EditRater(self.text, index, self.below)

    def answer_event(self) -> p.AnswerConfidence | None:
        """The answer's pieces, once the response is over (None: nothing known)."""
        if not self.text.known or not self.answer:
            return None
        pieces: list[TokenPiece] = []
        cursor = 0
        for delta in self.answer:
            at = self.text.locate(delta, cursor)
            if at < 0:
                pieces.append(TokenPiece(len(delta), 1.0, 0))  # not found: shown as sure
                continue
            cursor = at + len(delta)
            run_token, run_chars = -2, 0
            for i in range(at, cursor):
                token = self.text.token[i]
                if token != run_token and run_chars:
                    pieces.append(self._piece(i - run_chars, run_chars))
                    run_chars = 0
                run_token = token
                run_chars += 1
            if run_chars:
                pieces.append(self._piece(cursor - run_chars, run_chars))
        return p.AnswerConfidence(confidence=encode_pieces(pieces))

    def _piece(self, begin: int, chars: int) -> TokenPiece:
        confidence = self.text.confidence[begin]
        step = self.text.steps[begin] if begin < len(self.text.steps) else 0
        return TokenPiece(chars, 1.0 if confidence is None else confidence, step)
