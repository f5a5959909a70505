"""``/export [md|html] [FILE]`` in the app: this session written out as Markdown or as
one self-contained HTML page (the core's ``write_export``), in the background."""

from __future__ import annotations

import asyncio
from pathlib import Path

from clover_code.ui.host import SlashHost
from clover_code.ui.widgets.transcript import Transcript

_NAMES = {"md": "Markdown", "html": "HTML"}


def export(app: SlashHost, transcript: Transcript, arg: str) -> None:
    """Write this session to FILE (default ``clover-ID.md`` here), in the format named
    first or the one FILE's extension asks for; say where, or why not."""
    from clover_code.agent.open import EXPORT_FORMATS, ExportFormat, format_for, write_export
    from clover_code.errors import CloverError

    started = app.started
    if started is None:
        transcript.add_note("No session is open to export.", "warning")
        return
    text = arg.strip()
    chosen: ExportFormat | None = None
    first, _, rest = text.partition(" ")
    for known in EXPORT_FORMATS:
        if first == known:
            chosen, text = known, rest.strip()
    name = text or f"clover-{started.session_id}.{chosen or 'md'}"
    target = Path(name).expanduser()
    out = target if target.is_absolute() else app.cwd / target
    export_format = chosen or format_for(out)
    source = Path(started.transcript)

    async def write() -> None:
        try:
            await asyncio.to_thread(write_export, source, export_format, out)
        except CloverError as exc:
            transcript.add_note(str(exc), "error")
            return
        shown = out.relative_to(app.cwd) if out.is_relative_to(app.cwd) else out
        transcript.add_note(f"Exported this session as {_NAMES[export_format]} to {shown}.")

    app.run_worker(write())
