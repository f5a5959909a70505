"""How headless output looks while a run goes: text, or every event as a JSON line.

(``json`` prints only the final ``TaskResult``, written by ``clover_code.headless``.)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal, TextIO

from clover_code import protocol as p

OutputFormat = Literal["text", "json", "stream-json"]


class TextRenderer:
    """Answer text to stdout as blocks arrive; progress and problems to stderr."""

    def __init__(self, out: TextIO, err: TextIO) -> None:
        self.out, self.err = out, err
        self._ends_with_newline = True

    def __call__(self, event: p.Event) -> None:
        if isinstance(event, p.ContentDelta):
            self.out.write(event.text)
            self.out.flush()
            self._ends_with_newline = event.text.endswith("\n")
        elif isinstance(event, p.ToolCallStarted) and event.kind != "other":
            self._break_line()
            self.err.write(f"» {event.name} {event.summary}\n")
        elif isinstance(event, p.ToolCallFinished) and event.status != "ok":
            first = event.result.strip().splitlines()[0] if event.result.strip() else ""
            self.err.write(f"  {event.status}: {first[:200]}\n")
        elif isinstance(event, p.Notice):
            self.err.write(f"{event.level}: {event.text}\n")
        elif isinstance(event, p.ErrorEvent):
            self._break_line()
            self.err.write(f"error: {event.message}\n")
        elif isinstance(event, p.TurnFinished):
            self._break_line()
        elif isinstance(event, p.SubagentEvent) and isinstance(event.event, p.ToolCallStarted):
            child = event.event
            self._break_line()
            self.err.write(f"  » [{event.agent}] {child.name} {child.summary}\n")
        self.err.flush()

    def _break_line(self) -> None:
        if not self._ends_with_newline:
            self.out.write("\n")
            self.out.flush()
            self._ends_with_newline = True


class StreamJsonRenderer:
    """Every protocol event as one JSON line on stdout, each piece of text once.

    Answer and reasoning text travel only in ``content_delta`` and
    ``reasoning_delta``: ``block_committed`` keeps its block number and token
    counts but not its text, and ``turn_finished`` leaves out ``final_text``.
    The closing ``result`` line repeats the final answer as a summary.
    """

    def __init__(self, out: TextIO) -> None:
        self.out = out

    def __call__(self, event: p.Event) -> None:
        if isinstance(event, p.BlockCommitted):
            line = event.model_dump_json(exclude={"text"})
        elif isinstance(event, p.TurnFinished):
            line = event.model_dump_json(exclude={"final_text"})
        elif isinstance(event, p.SubagentEvent) and isinstance(
            event.event, p.BlockCommitted | p.TurnFinished
        ):
            # A child's text is sent once too, in its deltas.
            inner = "text" if isinstance(event.event, p.BlockCommitted) else "final_text"
            line = event.model_dump_json(exclude={"event": {inner}})
        else:
            line = event.model_dump_json()
        self.out.write(line + "\n")
        self.out.flush()


def renderer(
    output_format: OutputFormat, out: TextIO, err: TextIO
) -> Callable[[p.Event], None] | None:
    """The renderer of an output format (json prints only the result: None)."""
    if output_format == "stream-json":
        return StreamJsonRenderer(out)
    if output_format == "text":
        return TextRenderer(out, err)
    return None
