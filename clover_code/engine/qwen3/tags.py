"""Tags, scanning helpers and whitespace trimming for the Qwen3 stream parser.

Kept apart from the parser's state machine so each file stays readable.
"""

from __future__ import annotations

import itertools
import secrets
from typing import Any, Final

from clover_code.engine.events import ContentDelta, EngineEvent, ReasoningDelta
from clover_code.protocol.json_text import loads_bounded

_THINK_OPEN: Final = "<think>"
_THINK_CLOSE: Final = "</think>"
_CALL_OPEN: Final = "<tool_call>"
_CALL_CLOSE: Final = "</tool_call>"
_FUNC_OPEN: Final = "<function="
_FUNC_CLOSE: Final = "</function>"
_PARAM_OPEN: Final = "<parameter="
_PARAM_CLOSE: Final = "</parameter>"
_STOPS: Final = ("<|im_end|>", "<|endoftext|>")
_LONGEST_STOP: Final = max(len(stop) for stop in _STOPS)

# A function or parameter name longer than this means the "tag" was not one.
_MAX_NAME: Final = 256

# Tags that may follow a real </parameter>; anything else after it means the
# "</parameter>" was part of the value (e.g. the model editing this file).
_AFTER_PARAM: Final = (_PARAM_OPEN, _FUNC_CLOSE, _CALL_CLOSE, *_STOPS)
_FUNCTION_TAGS: Final = (_PARAM_OPEN, _FUNC_CLOSE, _CALL_CLOSE)

# Held-back tails, per parser state: the state's own tags plus the stop tokens, which
# are searched for in ``feed`` and so must not be released half-seen either.
_HOLD_REASONING: Final = (_THINK_CLOSE, *_STOPS)
_HOLD_CONTENT: Final = (_CALL_OPEN, *_STOPS)
_HOLD_FUNCTION: Final = (*_FUNCTION_TAGS, *_STOPS)
_HOLD_VALUE: Final = (_PARAM_CLOSE, *_STOPS)
_HOLD_JSON_CALL: Final = (_CALL_CLOSE, *_STOPS)
_AFTER_FUNCTION_TAGS: Final = (_CALL_CLOSE, _FUNC_OPEN, *_STOPS)

_ALL_TAGS: Final = (_THINK_OPEN, *_HOLD_REASONING, *_HOLD_CONTENT, *_HOLD_FUNCTION, _FUNC_OPEN)
_LONGEST_TAG: Final = max(len(tag) for tag in _ALL_TAGS)

# Every tag contains "<" only as its first character; ``_release_end`` relies
# on that to look at a single candidate suffix (tests/unit/engine/qwen3/test_qwen3_parser.py
# checks it).

# Call ids: a random per-process base stepped by an odd constant is a
# bijection on 32 bits, so ids never repeat within a process yet look random.
_ID_BASE: Final = secrets.randbits(32)
_ID_SEQUENCE = itertools.count()


def _new_call_id() -> str:
    return f"call_{(_ID_BASE + next(_ID_SEQUENCE) * 0x9E3779B1) & 0xFFFFFFFF:08x}"


def _release_end(buf: str, tags: tuple[str, ...], final: bool) -> int:
    """How much of ``buf`` can be released: all but a suffix that may begin one of ``tags``."""
    if final:
        return len(buf)
    start = buf.rfind("<", max(0, len(buf) - _LONGEST_TAG + 1))
    if start < 0:
        return len(buf)
    tail = buf[start:]
    for tag in tags:
        if len(tail) < len(tag) and tag.startswith(tail):
            return start
    return len(buf)


def _first_tag(buf: str, tags: tuple[str, ...]) -> tuple[int, str]:
    """The earliest complete tag in ``buf`` as (position, tag), or (-1, "")."""
    best, found = -1, ""
    for tag in tags:
        at = buf.find(tag, 0, best + len(tag) if best >= 0 else len(buf))
        if at >= 0 and (best < 0 or at < best):
            best, found = at, tag
    return best, found


def _name_end(buf: str) -> int:
    """Where a ``<function=`` / ``<parameter=`` name ends: its ``>``, or a newline if sooner.

    Only the first ``_MAX_NAME`` characters count, so the answer does not
    depend on how much text has arrived.
    """
    limit = min(len(buf), _MAX_NAME + 1)
    close = buf.find(">", 0, limit)
    newline = buf.find("\n", 0, close if close >= 0 else limit)
    return newline if newline >= 0 else close


def _valid_name(name: str) -> bool:
    return bool(name) and "<" not in name and len(name.split()) == 1


def _parse_json_call(body: str) -> tuple[str, dict[str, Any]] | None:
    """Read the older Hermes form ``{"name": ..., "arguments": {...}}`` inside ``<tool_call>``."""
    try:
        data = loads_bounded(body)
    except ValueError:
        return None
    if not isinstance(data, dict):
        return None
    name = data.get("name")
    arguments = data.get("arguments", data.get("parameters", {}))
    if isinstance(arguments, str):
        try:
            arguments = loads_bounded(arguments)
        except ValueError:
            return None
    if not isinstance(name, str) or not _valid_name(name) or not isinstance(arguments, dict):
        return None
    return name, arguments


class _TextRun:
    """One stream of text (reasoning or answer) with its edges trimmed.

    Whitespace at the start of a run is dropped, and trailing whitespace is
    held until more text follows: the newlines around tags are format, not
    words, and only later text tells whether whitespace was inner or trailing.
    """

    __slots__ = ("pending", "started")

    def __init__(self) -> None:
        self.pending = ""
        self.started = False

    def push(self, text: str) -> str:
        """Add text; return what may be shown now."""
        if not self.started:
            text = text.lstrip()
            if not text:
                return ""
            self.started = True
        body = text.rstrip()
        if not body:
            self.pending += text
            return ""
        released = self.pending + body if self.pending else body
        self.pending = text[len(body) :]
        return released

    def emit(
        self, out: list[EngineEvent], kind: type[ReasoningDelta] | type[ContentDelta], text: str
    ) -> None:
        """Push ``text`` and add what may be shown to ``out``, merged into the last
        event when that is a delta of the same kind."""
        text = self.push(text) if text else ""
        if not text:
            return
        last = out[-1] if out else None
        if type(last) is kind:
            last.text += text
        else:
            out.append(kind(text))

    def restart(self) -> None:
        """Forget held whitespace; the next text starts a new run."""
        self.pending = ""
        self.started = False
