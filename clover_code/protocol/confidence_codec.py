"""The compact form of committed tokens' fill confidences: about one byte per token.

A committed token is a ``TokenPiece``: its length in characters, its fill
confidence and the denoising step that filled it. ``encode_pieces`` writes a
list of them as one JSON-safe string; ``decode_pieces`` reads it back, with
lengths and steps exact and each confidence within half a level (0.025) of
what it was.

The string is one of:

- ``""``: no pieces.
- ``"~"`` and then base85 (Python's ``b85encode`` alphabet: letters, digits
  and ``!#$%&()*+-;<=>?@^_`{|}~``, none of which JSON escapes) of a range-coded
  bit stream: the current form.
- Anything else is the first form, still read (format-2 transcripts written
  before this one hold it): base64 of three bytes per piece, the confidence
  as 0..255, the step and the length (a piece over 255 characters split in
  two; steps over 255 written as 255).

What the stream codes, for each piece in order (after the number of pieces):
the step as its difference from the previous piece's (positions tend to be
filled left to right, several per step, so the difference is mostly 0 or 1);
the confidence as one of ``LEVELS`` levels of 0.05, counted down from the top
one (with the default fill threshold of 0.95 every token the rule filled is in it);
the length less one (or the length, when some piece is empty: one flag says
which). Each is cut into binary decisions (a flag, or an Elias-gamma number:
how many bits, then the bits), and each decision is coded with a probability
that learns from the ones before it in the same string (quickly at first),
so what is common in this string costs a fraction of a bit. Nothing else is
stored. On a Clover-like sample that is about 0.9 characters a token for a
whole response and 1.06 for one 32-token block, against 4 in the first form
(``bench/confidence_size.py``; ``docs/confidence.md``).

Levels are 0.05 wide and a confidence is read back as the middle of its
level, so any threshold that is a multiple of 0.05 up to 0.95 (the view's 0.5
and 0.9, the default ``low_confidence``) sorts every token exactly as its
unrounded confidence would.
"""

from __future__ import annotations

import base64
import math
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["LEVELS", "TAG", "TokenPiece", "decode_pieces", "encode_pieces", "level"]

LEVELS = 20
"""Confidence levels of the compact form, each 1/20 = 0.05 wide."""

TAG = "~"
"""The first character of the current form (never the first of a base64 string)."""

_PROB_BITS = 12
_ONE = 1 << _PROB_BITS
_SEEN_BITS = 4
_RATE = [min(4, round(math.log2(seen + 2))) for seen in range(1 << _SEEN_BITS)]
"""How far a probability moves towards what it just coded, as a shift, by how many
decisions it has coded before: half way after the first, then about 1/(n + 2) (a
running average) until it settles at 1/16 (a window of the last few dozen)."""
_SEEN_MASK = (1 << _SEEN_BITS) - 1
_NEXT = [min(seen + 1, _SEEN_MASK) for seen in range(1 << _SEEN_BITS)]
_HALF = (_ONE // 2) << _SEEN_BITS
"""A probability's state: the chance of a 0 (out of 4096) and how many it has seen."""
_TOP = 1 << 24
_MASK = 0xFFFFFFFF
_MAX_BITS = 40
"""The longest number a piece may hold (as bits): anything longer is a corrupt string."""
_FLOOR = 32
"""No probability goes below 32/4096 (1/128): a decision costs at least 0.011 bits."""
_MAX_PIECES_PER_BYTE = 256
"""More pieces than this per byte of stream can only be a corrupt string: a piece is
at least three decisions, 0.034 bits, so a byte holds at most 236 (and the end of
the stream a few bytes' worth more)."""
_TREE_BITS = 4
"""The leading bits of a number under its top one that get adaptive probabilities."""


@dataclass(slots=True, frozen=True)
class TokenPiece:
    """One committed token's text length, fill confidence and fill step."""

    chars: int
    confidence: float
    step: int


def level(confidence: float) -> int:
    """The level (0..LEVELS-1) holding ``confidence``: ``c`` is in ``floor(c * 20)``, so a
    confidence below ``k / 20`` is always in a level below ``k``."""
    if not confidence > 0.0:  # NaN and anything not above 0
        return 0
    if confidence >= 1.0:
        return LEVELS - 1
    q = min(LEVELS - 1, int(confidence * LEVELS))
    # the product may round across a level's edge: compare with the edges themselves
    while q < LEVELS - 1 and confidence >= (q + 1) / LEVELS:
        q += 1
    while q > 0 and confidence < q / LEVELS:
        q -= 1
    return q


def _middle(q: int) -> float:
    """The confidence a level is read back as: the middle of its range."""
    return (q + 0.5) / LEVELS


class _Encoder:
    """A binary range coder (32-bit range, carry propagated through a held byte)."""

    def __init__(self) -> None:
        self.low = 0
        self.range = _MASK
        self.cache = 0
        self.held = 1
        self.out = bytearray()
        self.shifts = 0

    def _shift(self) -> None:
        self.shifts += 1
        low = self.low
        if low < 0xFF000000 or low > _MASK:
            carry = low >> 32
            byte = self.cache
            while True:
                self.out.append((byte + carry) & 0xFF)
                byte = 0xFF
                self.held -= 1
                if not self.held:
                    break
            self.cache = (low >> 24) & 0xFF
        self.held += 1
        self.low = (low & 0x00FFFFFF) << 8

    def bit(self, probs: list[int], at: int, bit: int) -> None:
        """Code ``bit`` with ``probs[at]`` (the chance of a 0), then adapt it."""
        state = probs[at]
        p, seen = state >> _SEEN_BITS, state & _SEEN_MASK
        bound = (self.range >> _PROB_BITS) * p
        if bit:
            self.low += bound
            self.range -= bound
            p -= (p - _FLOOR) >> _RATE[seen]
        else:
            self.range = bound
            p += (_ONE - _FLOOR - p) >> _RATE[seen]
        probs[at] = (p << _SEEN_BITS) | _NEXT[seen]
        while self.range < _TOP:
            self.range <<= 8
            self._shift()

    def plain(self, value: int, bits: int) -> None:
        """Code the low ``bits`` bits of ``value`` at even odds."""
        for k in range(bits - 1, -1, -1):
            self.range >>= 1
            if (value >> k) & 1:
                self.low += self.range
            while self.range < _TOP:
                self.range <<= 8
                self._shift()

    def finish(self) -> bytes:
        """The stream: the value in range with the most trailing zero bits, and its
        bytes past the coded ones left out where they are zeros (the decoder reads past
        the end as zeros). Bytes coded before are all kept, so a stream is never much
        shorter than what it codes costs (``_MAX_PIECES_PER_BYTE``)."""
        coded = self.shifts - 1  # the first byte out is always 0, and is left out
        last = self.low + self.range - 1
        for k in range(40, -1, -1):
            value = (last >> k) << k
            if value >= self.low:
                self.low = value
                break
        for _ in range(5):
            self._shift()
        data = bytes(self.out[1:])
        end = len(data)
        while end > coded and data[end - 1] == 0:
            end -= 1
        return data[:end]


class _Decoder:
    """Reads what ``_Encoder`` wrote."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.at = 0
        self.range = _MASK
        self.code = 0
        for _ in range(4):
            self.code = (self.code << 8) | self._byte()

    def _byte(self) -> int:
        at = self.at
        self.at += 1
        return self.data[at] if at < len(self.data) else 0

    def bit(self, probs: list[int], at: int) -> int:
        state = probs[at]
        p, seen = state >> _SEEN_BITS, state & _SEEN_MASK
        bound = (self.range >> _PROB_BITS) * p
        if self.code < bound:
            self.range = bound
            p += (_ONE - _FLOOR - p) >> _RATE[seen]
            bit = 0
        else:
            self.code -= bound
            self.range -= bound
            p -= (p - _FLOOR) >> _RATE[seen]
            bit = 1
        probs[at] = (p << _SEEN_BITS) | _NEXT[seen]
        while self.range < _TOP:
            self.range <<= 8
            self.code = ((self.code << 8) | self._byte()) & _MASK
        return bit

    def plain(self, bits: int) -> int:
        value = 0
        for _ in range(bits):
            self.range >>= 1
            bit = 1 if self.code >= self.range else 0
            if bit:
                self.code -= self.range
            value = (value << 1) | bit
            while self.range < _TOP:
                self.range <<= 8
                self.code = ((self.code << 8) | self._byte()) & _MASK
        return value


class _Number:
    """Adaptive Elias-gamma coding of a number >= 0: how many bits ``n`` follow the top
    one of ``value + 1`` (in unary), then those bits, the first few adaptively."""

    def __init__(self) -> None:
        self.unary = [_HALF] * (_MAX_BITS + 1)
        self.tree = [_HALF] * ((_MAX_BITS + 1) << _TREE_BITS)

    def encode(self, coder: _Encoder, value: int) -> None:
        value += 1
        n = value.bit_length() - 1
        if n > _MAX_BITS:
            raise ValueError(f"a number of {n + 1} bits is too large for the compact form")
        for k in range(n):
            coder.bit(self.unary, k, 1)
        if n < _MAX_BITS:
            coder.bit(self.unary, n, 0)
        node = 1
        for k in range(n - 1, max(-1, n - 1 - _TREE_BITS), -1):
            bit = (value >> k) & 1
            coder.bit(self.tree, (n << _TREE_BITS) | node, bit)
            node = (node << 1) | bit
        rest = max(0, n - _TREE_BITS)
        coder.plain(value, rest)

    def decode(self, coder: _Decoder) -> int:
        n = 0
        while n < _MAX_BITS and coder.bit(self.unary, n):
            n += 1
        value = node = 1
        for _ in range(min(n, _TREE_BITS)):
            bit = coder.bit(self.tree, (n << _TREE_BITS) | node)
            node = (node << 1) | bit
            value = (value << 1) | bit
        rest = max(0, n - _TREE_BITS)
        return ((value << rest) | coder.plain(rest)) - 1


class _Model:
    """The adaptive probabilities of one string, the encoder's and the decoder's alike."""

    def __init__(self) -> None:
        self.count = _Number()
        self.flags = [_HALF] * 4
        """0: some piece is empty; 1: the step changed; 2: it went down; 3: below the top level."""
        self.rise = _Number()
        self.fall = _Number()
        self.below_top = _Number()
        self.length = _Number()


def encode_pieces(pieces: Sequence[TokenPiece]) -> str:
    """The compact form of ``pieces`` (``""`` for none)."""
    if not pieces:
        return ""
    model = _Model()
    coder = _Encoder()
    model.count.encode(coder, len(pieces))
    empty = any(piece.chars <= 0 for piece in pieces)
    coder.bit(model.flags, 0, int(empty))
    previous = 0
    for piece in pieces:
        step = max(0, piece.step)
        change = step - previous
        coder.bit(model.flags, 1, int(change != 0))
        if change:
            coder.bit(model.flags, 2, int(change < 0))
            (model.fall if change < 0 else model.rise).encode(coder, abs(change) - 1)
        below = LEVELS - 1 - level(piece.confidence)
        coder.bit(model.flags, 3, int(below != 0))
        if below:
            model.below_top.encode(coder, below - 1)
        model.length.encode(coder, max(0, piece.chars) - (0 if empty else 1))
        previous = step
    return TAG + base64.b85encode(coder.finish()).decode("ascii")


def decode_pieces(text: str) -> list[TokenPiece]:
    """The pieces of an ``encode_pieces`` string (either form); ValueError with one
    sentence saying what is wrong when it is not one."""
    if not text:
        return []
    if not text.startswith(TAG):
        return _decode_first_form(text)
    try:
        data = base64.b85decode(text[1:])
    except ValueError as exc:
        raise ValueError(f"the confidence string is not base85 after its {TAG!r}: {exc}") from exc
    model = _Model()
    coder = _Decoder(data)
    count = model.count.decode(coder)
    if count > _MAX_PIECES_PER_BYTE * (len(data) + 8):
        raise ValueError(
            f"the confidence string claims {count} tokens, more than its "
            f"{len(data)} bytes can hold: it is corrupt"
        )
    empty = coder.bit(model.flags, 0)
    pieces: list[TokenPiece] = []
    step = 0
    for _ in range(count):
        if coder.bit(model.flags, 1):
            if coder.bit(model.flags, 2):
                step -= model.fall.decode(coder) + 1
            else:
                step += model.rise.decode(coder) + 1
        below = model.below_top.decode(coder) + 1 if coder.bit(model.flags, 3) else 0
        chars = model.length.decode(coder) + (0 if empty else 1)
        if step < 0 or below >= LEVELS:
            raise ValueError("the confidence string decodes to impossible values: it is corrupt")
        pieces.append(TokenPiece(chars, _middle(LEVELS - 1 - below), step))
    if coder.at < len(data):
        raise ValueError("the confidence string has bytes after its last token: it is corrupt")
    return pieces


def _decode_first_form(text: str) -> list[TokenPiece]:
    """The first form: base64 of (confidence 0..255, step, length) per piece."""
    try:
        raw = base64.b64decode(text, validate=True)
    except ValueError as exc:  # binascii.Error, or a character that is not ASCII
        raise ValueError(
            f"the confidence string is neither the compact form (starting {TAG!r}) "
            f"nor base64: {exc}"
        ) from exc
    if len(raw) % 3:
        raise ValueError("the confidence string's first form must hold three bytes per token")
    return [TokenPiece(raw[i + 2], raw[i] / 255, raw[i + 1]) for i in range(0, len(raw), 3)]
