"""Streaming parser for raw Qwen3.x output: reasoning, answer text and qwen3_coder tool calls.

Used when a server returns raw text (no ``--reasoning-parser`` /
``--tool-call-parser``) and by the local engines. Feed it text in whatever
pieces arrive (a 32-token block, one character); it emits ``ReasoningDelta``,
``ContentDelta`` and ``ToolCallStart/Args/End`` as soon as the text is
unambiguous and never anything else (block grouping and ``Finished`` are the
caller's).

The output it reads::

    reasoning text (the prompt already opened <think>)
    </think>

    answer text

    <tool_call>
    <function=NAME>
    <parameter=P>
    VALUE
    </parameter>
    </function>
    </tool_call>

Cost is linear in the text: each ``feed`` scans the new text plus a held-back
tail no longer than the longest tag, never the whole response again.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from enum import IntEnum, auto
from typing import Final

from clover_code.engine.base import ToolSpec
from clover_code.engine.events import (
    ContentDelta,
    EngineEvent,
    ReasoningDelta,
)
from clover_code.engine.qwen3.calls import Call, CallBuilder
from clover_code.engine.qwen3.tags import (
    _AFTER_FUNCTION_TAGS,
    _AFTER_PARAM,
    _CALL_CLOSE,
    _CALL_OPEN,
    _FUNC_CLOSE,
    _FUNC_OPEN,
    _FUNCTION_TAGS,
    _HOLD_CONTENT,
    _HOLD_FUNCTION,
    _HOLD_JSON_CALL,
    _HOLD_REASONING,
    _HOLD_VALUE,
    _LONGEST_STOP,
    _MAX_NAME,
    _PARAM_CLOSE,
    _PARAM_OPEN,
    _STOPS,
    _THINK_CLOSE,
    _THINK_OPEN,
    _first_tag,
    _name_end,
    _parse_json_call,
    _release_end,
    _TextRun,
    _valid_name,
)

__all__ = ["ParserState", "Qwen3StreamParser"]


class ParserState(IntEnum):
    """Where the parser is in the output; ``_HANDLERS`` maps each state to its handler.

    An ``IntEnum`` because the handler is looked up for every piece of text:
    an int hashes in C, where a plain ``Enum`` hashes its name in Python.
    """

    START = auto()  # nothing seen yet: the model may open its own <think>
    REASONING = auto()  # thinking, until </think>
    CONTENT = auto()  # answer text, until <tool_call>
    CALL_OPENED = auto()  # after <tool_call>: the XML form, the JSON form, or prose?
    JSON_CALL = auto()  # {"name": ..., "arguments": ...}, until </tool_call>
    FUNC_NAME = auto()  # after <function=, until its ">"
    IN_FUNCTION = auto()  # between parameters, until <parameter= or </function>
    PARAM_NAME = auto()  # after <parameter=, until its ">"
    PARAM_VALUE = auto()  # a parameter's value, until a real </parameter>
    AFTER_FUNCTION = auto()  # after </function>: </tool_call> or another <function=


class Qwen3StreamParser:
    """Incremental parser for one response of a Qwen3.x model in its raw text form.

    ``tools`` supplies the JSON schemas that type parameter values (and the
    names a call may use). ``starts_in_reasoning`` says the prompt ended with
    ``<think>\\n``, so output is reasoning until ``</think>``; when false it is
    answer text unless it opens with its own ``<think>`` section.

    ``feed`` returns the events the new text settles; ``finish`` flushes at
    the end of the stream. ``<|im_end|>`` / ``<|endoftext|>`` end the output:
    text after them is ignored. Malformed markup never raises: a call cut off
    or garbled after its name is known ends with ``ToolCallEnd.error`` set;
    ``<tool_call>`` text that never names a function is passed on as content.
    """

    def __init__(self, tools: Sequence[ToolSpec] = (), *, starts_in_reasoning: bool = True) -> None:
        self._calls = CallBuilder(tools)
        self._starts_in_reasoning = starts_in_reasoning
        self._state = ParserState.START
        self._buf = ""  # unconsumed text: at most a held-back tail between feeds
        self._out: list[EngineEvent] = []
        self._reasoning = _TextRun()
        self._content = _TextRun()
        self._raw = ""  # tag text already consumed that may turn out to be plain content
        self._json_parts: list[str] = []
        self._closed = False

    @property
    def saw_tool_call(self) -> bool:
        """Whether a tool call (with a function name) has started in this response."""
        return self._calls.seen

    def feed(self, text: str) -> list[EngineEvent]:
        """Take the next piece of output; return the events it settles."""
        if self._closed or not text:
            return []
        # A stop token may straddle the previous piece, so look a little back.
        search_from = max(0, len(self._buf) - _LONGEST_STOP + 1)
        self._buf += text
        stop = -1
        for token in _STOPS:
            at = self._buf.find(token, search_from)
            if at >= 0 and (stop < 0 or at < stop):
                stop = at
        if stop >= 0:
            self._buf = self._buf[:stop]
            self._close()
        else:
            self._drain(final=False)
        return self._take()

    def finish(self) -> list[EngineEvent]:
        """End of stream: release held text and close an unterminated call. Idempotent."""
        if not self._closed:
            self._close()
        return self._take()

    # -- driving ---------------------------------------------------------------

    def _drain(self, final: bool) -> None:
        # Each handler consumes input or changes state when it returns True, so
        # this ends; False means it needs more text (or, when final, is done).
        while _HANDLERS[self._state](self, final):
            pass

    def _close(self) -> None:
        self._drain(final=True)
        self._out += self._calls.cut_off(inside_value=self._state == ParserState.PARAM_VALUE)
        self._buf = ""
        self._closed = True

    def _take(self) -> list[EngineEvent]:
        out, self._out = self._out, []
        return out

    # -- emitting --------------------------------------------------------------

    def _emit_reasoning(self, text: str) -> None:
        self._reasoning.emit(self._out, ReasoningDelta, text)

    def _emit_content(self, text: str) -> None:
        self._content.emit(self._out, ContentDelta, text)

    def _not_a_call(self) -> None:
        """The ``<tool_call>`` seen so far was literal text: hand it on as content."""
        self._emit_content(self._raw)
        self._raw = ""
        self._state = ParserState.CONTENT

    def _start_call(self, name: str) -> Call:
        call, events = self._calls.start(name)
        # Whitespace held before the call separated it from the text; drop it.
        self._content.restart()
        self._out += events
        return call

    # -- state handlers: return True after a state change -------------------------

    def _start(self, final: bool) -> bool:
        # Leading whitespace is dropped by either text run anyway.
        buf = self._buf = self._buf.lstrip()
        if buf.startswith(_THINK_OPEN):
            self._buf = buf[len(_THINK_OPEN) :]
            self._state = ParserState.REASONING
            return True
        if not final and (not buf or _THINK_OPEN.startswith(buf)):
            return False
        self._state = ParserState.REASONING if self._starts_in_reasoning else ParserState.CONTENT
        return True

    def _in_reasoning(self, final: bool) -> bool:
        buf = self._buf
        at = buf.find(_THINK_CLOSE)
        if at >= 0:
            self._emit_reasoning(buf[:at])
            self._buf = buf[at + len(_THINK_CLOSE) :]
            self._state = ParserState.CONTENT
            return True
        end = _release_end(buf, _HOLD_REASONING, final)
        self._emit_reasoning(buf[:end])
        self._buf = buf[end:]
        return False

    def _in_content(self, final: bool) -> bool:
        buf = self._buf
        at = buf.find(_CALL_OPEN)
        if at >= 0:
            self._emit_content(buf[:at])
            self._raw = _CALL_OPEN
            self._buf = buf[at + len(_CALL_OPEN) :]
            self._state = ParserState.CALL_OPENED
            return True
        end = _release_end(buf, _HOLD_CONTENT, final)
        self._emit_content(buf[:end])
        self._buf = buf[end:]
        return False

    def _call_opened(self, final: bool) -> bool:
        buf = self._buf
        rest = buf.lstrip()
        self._raw += buf[: len(buf) - len(rest)]
        self._buf = rest
        if rest.startswith(_FUNC_OPEN):
            self._raw += _FUNC_OPEN
            self._buf = rest[len(_FUNC_OPEN) :]
            self._state = ParserState.FUNC_NAME
            return True
        if rest.startswith("{"):
            self._json_parts = []
            self._state = ParserState.JSON_CALL
            return True
        if not final and (not rest or _FUNC_OPEN.startswith(rest)):
            return False
        # e.g. prose that mentions `<tool_call>`: not followed by a call body.
        self._not_a_call()
        return True

    def _json_call(self, final: bool) -> bool:
        buf = self._buf
        at = buf.find(_CALL_CLOSE)
        if at < 0 and not final:
            end = _release_end(buf, _HOLD_JSON_CALL, final)
            self._json_parts.append(buf[:end])
            self._buf = buf[end:]
            return False
        body = "".join(self._json_parts) + (buf[:at] if at >= 0 else buf)
        self._json_parts = []
        self._buf = buf[at + len(_CALL_CLOSE) :] if at >= 0 else ""
        parsed = _parse_json_call(body)
        if parsed is None:
            self._raw += body + (_CALL_CLOSE if at >= 0 else "")
            self._not_a_call()
            return True
        name, arguments = parsed
        self._raw = ""
        self._content.restart()
        self._out += self._calls.whole(name, arguments)
        self._state = ParserState.CONTENT
        return True

    def _function_name(self, final: bool) -> bool:
        buf = self._buf
        end = _name_end(buf)
        if end < 0:
            if not final and len(buf) <= _MAX_NAME:
                return False
            # Never closed: the consumed tags were text; rescan the rest as content.
            self._not_a_call()
            return True
        name = buf[:end].strip()
        self._buf = buf[end + 1 :]
        if not _valid_name(name):
            self._raw += buf[: end + 1]
            self._not_a_call()
            return True
        self._raw = ""
        self._calls.current = self._start_call(name)
        self._state = ParserState.IN_FUNCTION
        return True

    def _in_function(self, final: bool) -> bool:
        buf = self._buf
        at, tag = _first_tag(buf, _FUNCTION_TAGS)
        if at < 0:
            # Text between parameters is noise from the model: drop it.
            self._buf = buf[_release_end(buf, _HOLD_FUNCTION, final) :]
            return False
        self._buf = buf[at + len(tag) :]
        if tag == _PARAM_OPEN:
            self._state = ParserState.PARAM_NAME
        else:
            self._out += self._calls.end()
            self._state = ParserState.AFTER_FUNCTION if tag == _FUNC_CLOSE else ParserState.CONTENT
        return True

    def _parameter_name(self, final: bool) -> bool:
        call = self._calls.current
        assert call is not None
        buf = self._buf
        end = _name_end(buf)
        if end < 0 and (final or len(buf) <= _MAX_NAME):
            return False  # wait; at the end of output, _close reports the cut-off
        name = buf[:end].strip() if end >= 0 else ""
        if not _valid_name(name):
            if call.error is None:
                call.error = f"tool call '{call.name}' has a malformed <parameter=...> tag"
            self._buf = buf[end + 1 :] if end >= 0 else buf
            self._state = ParserState.IN_FUNCTION
            return True
        self._buf = buf[end + 1 :]
        call.param = name
        call.value = []
        self._state = ParserState.PARAM_VALUE
        return True

    def _parameter_value(self, final: bool) -> bool:
        call = self._calls.current
        assert call is not None
        buf = self._buf
        search_from = 0
        while True:
            at = buf.find(_PARAM_CLOSE, search_from)
            if at < 0:
                end = _release_end(buf, _HOLD_VALUE, final)
                call.value.append(buf[:end])
                self._buf = buf[end:]
                return False
            after = buf[at + len(_PARAM_CLOSE) :]
            rest = after.lstrip()
            if rest.startswith(_AFTER_PARAM):
                break
            if not rest or any(tag.startswith(rest) for tag in _AFTER_PARAM):
                if final:
                    break  # the output ended right after a real close tag
                # Cannot tell yet whether this </parameter> is real: keep it.
                call.value.append(buf[:at])
                self._buf = buf[at:]
                return False
            search_from = at + len(_PARAM_CLOSE)
        call.value.append(buf[:at])
        raw = "".join(call.value)
        call.value = []
        self._out += self._calls.parameter(call, raw)
        self._buf = after
        self._state = ParserState.IN_FUNCTION
        return True

    def _after_function(self, final: bool) -> bool:
        buf = self._buf.lstrip()
        self._buf = buf
        if buf.startswith(_CALL_CLOSE):
            self._buf = buf[len(_CALL_CLOSE) :]
            self._state = ParserState.CONTENT
            return True
        if buf.startswith(_FUNC_OPEN):
            # Several functions inside one <tool_call>: read the next one.
            self._raw = _FUNC_OPEN
            self._buf = buf[len(_FUNC_OPEN) :]
            self._state = ParserState.FUNC_NAME
            return True
        if not buf or any(tag.startswith(buf) for tag in _AFTER_FUNCTION_TAGS):
            if final:
                self._buf = ""  # a half-written closing tag carries nothing
            return False
        # The model left out </tool_call>: what follows is answer text.
        self._state = ParserState.CONTENT
        return True


# The handler of each state; unbound, so a parser holds no reference cycle.
_HANDLERS: Final[dict[ParserState, Callable[[Qwen3StreamParser, bool], bool]]] = {
    ParserState.START: Qwen3StreamParser._start,
    ParserState.REASONING: Qwen3StreamParser._in_reasoning,
    ParserState.CONTENT: Qwen3StreamParser._in_content,
    ParserState.CALL_OPENED: Qwen3StreamParser._call_opened,
    ParserState.JSON_CALL: Qwen3StreamParser._json_call,
    ParserState.FUNC_NAME: Qwen3StreamParser._function_name,
    ParserState.IN_FUNCTION: Qwen3StreamParser._in_function,
    ParserState.PARAM_NAME: Qwen3StreamParser._parameter_name,
    ParserState.PARAM_VALUE: Qwen3StreamParser._parameter_value,
    ParserState.AFTER_FUNCTION: Qwen3StreamParser._after_function,
}
