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
(an answer delta) in it, so what the parser made of the text still knows
which tokens it came from (an edit's lines are found by
``agent/turn/edit_confidence.py``, which also reads JSON-escaped calls).
"""

# Annotations are objects here, not text (no ``from __future__ import annotations``):
# pydantic reads every field's, and text would be compiled and evaluated at each start.

from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict, Field

from clover_code.protocol.confidence_codec import TokenPiece, decode_pieces, encode_pieces

__all__ = [
    "LOW_CONFIDENCE",
    "NO_CONFIDENCE",
    "ConfidenceText",
    "EditConfidence",
    "FileLowConfidence",
    "TokenPiece",
    "decode_pieces",
    "encode_pieces",
]

LOW_CONFIDENCE = 0.5
"""Below this a token counts as filled with low confidence (the setting's default)."""

NO_CONFIDENCE = (
    "Fill confidences are off: this engine reports none, so answers are not shaded and "
    "edits carry no low-confidence counts; only the hf engine and a clover-code serve "
    "server with drafts (remote_drafts = true) report them, not SGLang or other servers."
)
"""Said once where confidences would show, when the engine reports none."""


class FileLowConfidence(BaseModel):
    """One file's share of a patch's low-confidence tokens."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    tokens: int
    """Changed tokens of this file filled below the threshold."""
    lines: list[int]
    """1-based line numbers (in the file after the patch) holding them, ascending."""


class EditConfidence(BaseModel):
    """The low-confidence tokens of an edit: how many, the new file's lines holding them,
    and the fill confidence of each token of each added line."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    tokens: int
    """Changed tokens filled below the threshold."""
    lines: list[int]
    """1-based line numbers (in the file after the edit) holding them, ascending."""
    changed: int
    """Changed tokens whose confidence is known."""
    below: float
    """The threshold they were filled below."""
    files: dict[str, FileLowConfidence] = Field(default_factory=dict)
    """Per file the diff names (its ``+++`` header, without ``b/``) with rated lines:
    its share of ``tokens`` and ``lines`` (a patch touches several files)."""
    row_pieces: dict[int, str] = Field(default_factory=dict)
    """Per added line rated, keyed by its row in the diff (0-based; the diff split at
    newlines): the pieces (``encode_pieces``) of the line's text after its ``+``, from
    column 0 to its end; a span the model's tokens did not write is a piece of
    confidence 1.0 at step 0. Empty in records written before rows were kept."""


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
