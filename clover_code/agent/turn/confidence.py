"""The fill confidences of one model response, carried past the parser.

The engine's committed blocks hold the raw text and each token's confidence;
the parser turns that text into answer deltas and tool calls. ``ResponseConfidence``
keeps the raw text with a confidence per character, finds each answer delta
in it (in order), and rates an edit's added lines inside the raw text of the
call that made it (``edit_confidence``), so a diff line knows its tokens'
confidences.

Answer deltas are found as the response streams: a delta is looked for when
it arrives and again after each committed block (a server may send a block's
parsed text before its raw text), and the pieces found since the last time go
out as an ``AnswerConfidenceDelta``. A delta that is not found yet holds back
the ones after it; when the response ends, what is still not found counts as
sure, so the whole answer's pieces (``answer_event``) are what the deltas
streamed, in order, and then the rest.

``NoConfidenceNotice`` says once per session that the engine reports none.
"""

from __future__ import annotations

from clover_code import protocol as p
from clover_code.engine import events as ev
from clover_code.protocol.confidence import (
    NO_CONFIDENCE,
    ConfidenceText,
    EditConfidence,
    TokenPiece,
    encode_pieces,
)

__all__ = ["EditRater", "NoConfidenceNotice", "ResponseConfidence"]


class EditRater:
    """Rates the diff of one tool call of a response by its tokens' fill confidences."""

    def __init__(self, text: ConfidenceText, index: int, below: float) -> None:
        self.text = text
        self.index = index
        self.below = below

    def rate(self, diff: str, written: frozenset[str] = frozenset()) -> EditConfidence | None:
        """The low-confidence tokens of the lines ``diff`` adds, and each one's pieces,
        looked for in the call's ``written`` arguments (all: empty); None: not known."""
        from clover_code.agent.turn.edit_confidence import rate_edit  # the first edit loads it

        return rate_edit(self.text, self.index, diff, written, self.below)


class ResponseConfidence:
    """One response's raw text and confidences, and its answer text found in it."""

    def __init__(self, below: float) -> None:
        self.below = below
        self.text = ConfidenceText()
        self.blocks = 0
        """Committed blocks so far."""
        self.calls = 0
        self.pieces: list[TokenPiece] = []
        """The pieces of the answer text found so far, in order."""
        self._waiting: list[str] = []
        """Answer deltas not found in the raw text yet, in order."""
        self._cursor = 0
        """Where in the raw text the next delta is looked for."""
        self._sent = 0
        """How many of ``pieces`` went out while streaming."""

    def committed(self, block: ev.BlockCommitted) -> p.AnswerConfidenceDelta | None:
        """A committed block (its raw text and pieces); the pieces of the answer text
        found in it, if any."""
        self.text.add(block.text, block.pieces)
        self.blocks += 1
        return self._found()

    def content(self, delta: ev.ContentDelta) -> p.AnswerConfidenceDelta | None:
        """Answer text; its pieces, when its raw text has been committed already."""
        self._waiting.append(delta.text)
        return self._found()

    def call(self) -> EditRater:
        """A tool call ended: the rater of its edits (which rates None if nothing is known)."""
        index, self.calls = self.calls, self.calls + 1
        return EditRater(self.text, index, self.below)

    def answer_event(self) -> p.AnswerConfidence | None:
        """The answer's pieces, once the response is over (None: nothing known)."""
        if not self.text.known or not (self.pieces or self._waiting):
            return None
        self._locate(final=True)
        return p.AnswerConfidence(confidence=encode_pieces(self.pieces))

    def _found(self) -> p.AnswerConfidenceDelta | None:
        """The pieces found since the last time (None: none, or nothing is known)."""
        if not self.text.known or not self._waiting:
            return None
        self._locate(final=False)
        if len(self.pieces) == self._sent:
            return None
        fresh, self._sent = self.pieces[self._sent :], len(self.pieces)
        return p.AnswerConfidenceDelta(confidence=encode_pieces(fresh))

    def _locate(self, *, final: bool) -> None:
        """Find the waiting deltas in order; one not found stops the search, unless the
        response is over (then it counts as sure and the search goes on)."""
        done = 0
        for delta in self._waiting:
            if not delta:  # covers no text
                done += 1
                continue
            at = self.text.locate(delta, self._cursor)
            if at < 0:
                if not final:
                    break
                self.pieces.append(TokenPiece(len(delta), 1.0, 0))  # not found: shown as sure
                done += 1
                continue
            done += 1
            self._cursor = end = at + len(delta)
            run_token, run_chars = -2, 0
            for i in range(at, end):
                token = self.text.token[i]
                if token != run_token and run_chars:
                    self.pieces.append(self._piece(i - run_chars, run_chars))
                    run_chars = 0
                run_token = token
                run_chars += 1
            if run_chars:
                self.pieces.append(self._piece(end - run_chars, run_chars))
        del self._waiting[:done]

    def _piece(self, begin: int, chars: int) -> TokenPiece:
        confidence = self.text.confidence[begin]
        step = self.text.steps[begin] if begin < len(self.text.steps) else 0
        return TokenPiece(chars, 1.0 if confidence is None else confidence, step)


class NoConfidenceNotice:
    """Says once, as a warning, that the engine reports no fill confidences: after the
    first response that committed blocks without any (``emit`` None: never said)."""

    def __init__(self, emit: p.Emit | None) -> None:
        self._emit = emit

    def response_ended(self, confidence: ResponseConfidence) -> None:
        """A response ended: say it if it is the first to show the engine reports none."""
        if self._emit is None or not confidence.blocks or confidence.text.known:
            return
        emit, self._emit = self._emit, None
        emit(p.Notice(level="warning", text=NO_CONFIDENCE))
