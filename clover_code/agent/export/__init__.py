"""Exporting a stored session: the conversation with its reasoning, tool calls,
outputs and diffs, as Markdown or as one self-contained HTML page, secrets masked.

``export_session(path, "md")`` gives the text; ``write_export`` writes it to a
file (atomically). The app's ``/export`` and ``clover-code export`` use these;
``conversation.py`` reads the session, ``markdown.py`` and ``html.py`` write it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal, get_args

from clover_code.agent.export.conversation import read_conversation
from clover_code.agent.export.html import to_html
from clover_code.agent.export.markdown import to_markdown
from clover_code.errors import CloverError, UsageError
from clover_code.fs.atomic import atomic_write

__all__ = ["EXPORT_FORMATS", "ExportFormat", "export_session", "format_for", "write_export"]

ExportFormat = Literal["md", "html"]
EXPORT_FORMATS: tuple[ExportFormat, ...] = get_args(ExportFormat)


def format_for(path: Path) -> ExportFormat:
    """The format a file name asks for: HTML for ``.html``/``.htm``, else Markdown."""
    return "html" if path.suffix.lower() in (".html", ".htm") else "md"


def export_session(path: Path, export_format: ExportFormat) -> str:
    """The session stored at ``path`` as a Markdown or HTML document.

    Raises ``UsageError`` when the transcript cannot be read."""
    conversation = read_conversation(path)
    return to_html(conversation) if export_format == "html" else to_markdown(conversation)


def write_export(path: Path, export_format: ExportFormat, out: Path) -> Path:
    """Write the session stored at ``path`` to ``out``; ``UsageError`` (one sentence)
    when it cannot be read or ``out`` cannot be written."""
    text = export_session(path, export_format)
    if out.is_dir():
        raise UsageError(f"{out} is a directory; give a file name to export to.")
    try:
        atomic_write(out, text.encode("utf-8"))
    except CloverError as exc:
        raise UsageError(f"{exc}; choose a file where you may write.") from None
    return out
