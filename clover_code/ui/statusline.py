"""The status-line command: a program of the user's whose first line the status bar shows.

``StatusLine`` runs it when the session's state changes, at most once every
``statusline_interval`` ms, with the state as one JSON object on stdin
(``status_payload``: the shape of Claude Code's status line where the two
meet, plus the engine, branch, approval mode and sandbox). The run itself is
the core's (``agent.open.host_command``): checked like a hook before every
run, on the host, in the workspace, its process group killed after
``statusline_timeout`` seconds. A command that is refused, cannot start,
fails or is too slow is dropped with one notice, and the built-in status line
stays. Its output keeps colours (SGR sequences) and loses every other escape
sequence and control character (``first_line``).
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.text import Text

from clover_code import __version__
from clover_code import protocol as p
from clover_code.ui.clock import Clock
from clover_code.ui.turn_stats import TurnStats
from clover_code.ui.widgets.status_bar import StatusBar

if TYPE_CHECKING:
    from clover_code.agent.open import HookRun

__all__ = ["StatusLine", "StatusLineConfig", "first_line", "status_payload"]

MAX_CHARS = 500
"""Most characters of the line kept (the bar cuts it to its width)."""

_SGR = re.compile(r"\x1b\[[0-9;:]*m")
_ESCAPES = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]"  # CSI (cursor moves, clears, modes)
    r"|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?"  # OSC (titles, links, clipboard)
    r"|\x1b[PX^_][^\x1b]*(?:\x1b\\)?"  # DCS, SOS, PM, APC
    r"|\x1b[^\[\]PX^_]?"  # any other escape
)
_CONTROL = re.compile(r"[\x00-\x1a\x1c-\x1f\x7f-\x9f]")


@dataclass(frozen=True, slots=True)
class StatusLineConfig:
    """What the app needs to run the status line."""

    command: str
    """The command as configured (named in the notice when it is dropped)."""
    run: Callable[[Mapping[str, Any]], Awaitable[HookRun]]
    """Runs it once with this JSON on stdin."""
    interval: float
    """Seconds at least between two runs."""
    note: str | None = None
    """A sentence to show once when it starts (several plugins bring a status line)."""


def first_line(output: str) -> Text:
    """The first line of ``output`` with its colours, and nothing else that moves or
    changes the terminal."""
    line = output.split("\n", 1)[0].rstrip("\r")
    kept: list[str] = []
    at = 0
    for match in _ESCAPES.finditer(line):
        kept.append(_CONTROL.sub("", line[at : match.start()]))
        if _SGR.fullmatch(match.group(0)):
            kept.append(match.group(0))
        at = match.end()
    kept.append(_CONTROL.sub("", line[at:]))
    text = Text.from_ansi("".join(kept), no_wrap=True, overflow="ellipsis")
    text.truncate(MAX_CHARS)
    return text


def status_payload(
    *,
    started: p.SessionStarted | None,
    cwd: Path,
    bar: StatusBar,
    stats: TurnStats,
    opened_at: float,
    editor_mode: str | None,
) -> dict[str, Any]:
    """The JSON the command gets: the session, model, workspace, git, context, tokens,
    approval mode and (as far as known) cost."""
    window = max(1, bar.context_window)
    used = bar.context_used
    share = round(100 * used / window, 1)
    return {
        "hook_event_name": "Status",
        "session_id": started.session_id if started else None,
        "transcript_path": started.transcript if started else None,
        "cwd": str(cwd),
        "version": __version__,
        "engine": started.engine if started else None,
        "model": {"id": bar.model, "display_name": bar.model},
        "workspace": {
            "current_dir": str(cwd),
            "project_dir": started.cwd if started else str(cwd),
        },
        "git": {"branch": bar.branch or None, "dirty": bar.dirty},
        "approval_mode": bar.approval or None,
        "sandbox": bar.sandbox or None,
        "busy": bar.busy,
        "jobs": bar.jobs,
        "background_agents": bar.background,
        "context_window": {
            "context_window_size": bar.context_window,
            "used_tokens": used,
            "used_percentage": share,
            "remaining_percentage": round(100 - share, 1),
            "total_input_tokens": stats.prompt_tokens,
            "total_output_tokens": stats.completion_tokens,
        },
        "speed": {"tokens_per_second": bar.speed.tokens_per_second},
        # In the currency of [pricing]; null once a model without a price answered.
        "cost": {
            "total_cost_usd": stats.cost.total,
            "total_duration_ms": int(1000 * max(0.0, Clock.now() - opened_at)),
        },
        "vim": {"mode": editor_mode.upper()} if editor_mode else None,
    }


class StatusLine:
    """Runs the command on request, at most once per interval; shows its first line or,
    when it fails, drops it with one sentence."""

    def __init__(
        self,
        config: StatusLineConfig,
        *,
        payload: Callable[[], dict[str, Any]],
        show: Callable[[Text | None], None],
        drop: Callable[[str], None],
    ) -> None:
        self.config = config
        self._payload = payload
        self._show = show
        self._drop = drop
        self._wanted = asyncio.Event()
        self.dropped = False
        self.runs = 0

    def changed(self) -> None:
        """The state changed: run again (now, or once the interval has passed)."""
        self._wanted.set()

    async def run(self) -> None:
        """Run the command whenever asked, until it is dropped (the body of a worker)."""
        loop = asyncio.get_running_loop()
        while not self.dropped:
            await self._wanted.wait()
            self._wanted.clear()
            began = loop.time()
            result = await self.config.run(self._payload())
            self.runs += 1
            problem = _problem(result)
            if problem is not None:
                self.dropped = True
                self._show(None)
                self._drop(
                    f"The status line command '{self.config.command}' {problem}; it is not "
                    "run again this session (fix it, then restart clover-code)."
                )
                return
            line = first_line(result.stdout)
            self._show(line if line.plain.strip() else None)
            await asyncio.sleep(max(0.0, self.config.interval - (loop.time() - began)))


def _problem(result: HookRun) -> str | None:
    if result.problem is not None:
        return result.problem.rstrip(".")
    if result.code != 0:
        first = next((ln.strip() for ln in result.stderr.splitlines() if ln.strip()), "")
        return f"exited with status {result.code}" + (f" ({first[:200]})" if first else "")
    return None
