"""How headless output looks while a run goes: text, or every event as a JSON line.

(``json`` prints only the final ``TaskResult``, written by ``clover_code.headless.ending``.)
"""

from __future__ import annotations

from typing import Literal, TextIO

from clover_code import protocol as p

OutputFormat = Literal["text", "json", "stream-json"]

TAIL_LINES = 10
"""How many of a failed command's last output lines the text output shows."""
_TAIL_CHARS = 8_000


class TextRenderer:
    """Answer text to stdout as blocks arrive; progress and problems to stderr.

    A command that fails (non-zero exit, killed, timed out) shows how it ended
    and the last lines of its output, as the app's tool card does."""

    def __init__(self, out: TextIO, err: TextIO) -> None:
        self.out, self.err = out, err
        self._ends_with_newline = True
        self._output: dict[str, str] = {}
        """The end of each running command's output, by call id."""

    def __call__(self, event: p.Event) -> None:
        if isinstance(event, p.ContentDelta):
            self.out.write(event.text)
            self.out.flush()
            self._ends_with_newline = event.text.endswith("\n")
        elif isinstance(event, p.ToolCallStarted) and event.kind != "other":
            self._break_line()
            self.err.write(f"» {event.name} {event.summary}\n")
        elif isinstance(event, p.ToolOutput):
            self._output[event.call_id] = (self._output.get(event.call_id, "") + event.text)[
                -_TAIL_CHARS:
            ]
        elif isinstance(event, p.ToolCallFinished):
            self._finished(event, self._output.pop(event.call_id, ""))
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
        elif isinstance(event, p.BackgroundTaskFinished):
            self._break_line()
            self.err.write(f"» {event.task_id} ({event.agent}) ended: {event.display.status}\n")
        self.err.flush()

    def _finished(self, event: p.ToolCallFinished, output: str) -> None:
        run = event.display
        if isinstance(run, p.FileEdit | p.PatchApplied) and run.diagnostics:
            shown = run.diagnostics[:TAIL_LINES]
            self.err.writelines(
                f"    {d.path}:{d.line}:{d.column}: {d.severity}: {d.message[:200]}\n"
                for d in shown
            )
        if isinstance(run, p.CommandRun) and (run.exit_code != 0 or run.timed_out):
            ended = "killed" if run.exit_code is None else f"exit {run.exit_code}"
            ended += ", timed out" if run.timed_out else ""
            lines = output.rstrip().splitlines()[-TAIL_LINES:]
            self.err.write(f"  {ended}" + (":\n" if lines else "\n"))
            self.err.writelines(f"    {line[:200]}\n" for line in lines)
        elif event.status != "ok":
            first = event.result.strip().splitlines()[0] if event.result.strip() else ""
            # The result often starts with its status already ("denied: ...").
            first = first.removeprefix(f"{event.status}:").strip()
            self.err.write(f"  {event.status}: {first[:200]}\n")

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


def renderer(output_format: OutputFormat, out: TextIO, err: TextIO) -> p.Emit | None:
    """The renderer of an output format (json prints only the result: None)."""
    if output_format == "stream-json":
        return StreamJsonRenderer(out)
    if output_format == "text":
        return TextRenderer(out, err)
    return None
