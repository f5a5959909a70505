"""Diagnostics as the model reads them and as front ends show them.

A server's diagnostic (a JSON object it published) becomes a protocol
``Diagnostic`` when it is at least as severe as ``lsp_severity`` asks;
``FileCheck`` is what one file's check found; ``report_text`` is the
paragraph appended to an edit's result.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from clover_code.protocol import Diagnostic

__all__ = ["MAX_SHOWN", "FileCheck", "Severity", "from_lsp", "report_text"]

Severity = Literal["error", "warning"]

MAX_SHOWN = 20
"""Diagnostics of one file written into an edit's result; the diagnostics tool lists more."""
_MESSAGE_LIMIT = 400

_SEVERITIES: dict[int, Severity] = {1: "error", 2: "warning"}


@dataclass(slots=True)
class FileCheck:
    """What checking one file found."""

    path: str
    """Relative to the workspace root."""
    server: str = ""
    """The server that checked it (its program's name)."""
    diagnostics: list[Diagnostic] = field(default_factory=list)
    waiting: str | None = None
    """Why there is no answer yet (the server is starting, or was slow), if there is none."""


def from_lsp(items: Iterable[Mapping[str, Any]], path: str, least: Severity) -> list[Diagnostic]:
    """The diagnostics at least as severe as ``least``, in line order."""
    wanted = ("error",) if least == "error" else ("error", "warning")
    found: list[Diagnostic] = []
    for item in items:
        raw = item.get("severity", 1)  # unset: the client decides; an error is safest
        severity = _SEVERITIES.get(raw if isinstance(raw, int) else 1)
        if severity not in wanted:
            continue
        start = (
            item.get("range", {}).get("start", {}) if isinstance(item.get("range"), dict) else {}
        )
        line, column = start.get("line", 0), start.get("character", 0)
        code = item.get("code")
        found.append(
            Diagnostic(
                path=path,
                line=(line if isinstance(line, int) else 0) + 1,
                column=(column if isinstance(column, int) else 0) + 1,
                severity=severity,
                message=_one_line(item.get("message")),
                source=str(item.get("source") or "")[:40],
                code=str(code)[:80] if isinstance(code, str | int) else "",
            )
        )
    found.sort(key=lambda d: (d.line, d.column))
    return found


def _one_line(message: Any) -> str:
    text = " ".join(str(message or "").split())
    return text if len(text) <= _MESSAGE_LIMIT else text[: _MESSAGE_LIMIT - 1] + "…"


def line_of(diagnostic: Diagnostic) -> str:
    """``path:line:column: severity: message [code]``."""
    code = f" [{diagnostic.code}]" if diagnostic.code else ""
    return (
        f"{diagnostic.path}:{diagnostic.line}:{diagnostic.column}: "
        f"{diagnostic.severity}: {diagnostic.message}{code}"
    )


def report_text(checks: Iterable[FileCheck], limit: int = MAX_SHOWN) -> str:
    """The paragraph for an edit's result: each problem on a line, then what is still
    pending; "" when the checked files are clean."""
    lines: list[str] = []
    pending: list[str] = []
    servers: list[str] = []
    for check in checks:
        if check.waiting is not None:
            pending.append(f"{check.path}: {check.waiting}")
            continue
        if not check.diagnostics:
            continue
        servers.append(check.server)
        lines += [line_of(d) for d in check.diagnostics[:limit]]
        more = len(check.diagnostics) - limit
        if more > 0:
            lines.append(f"… and {more} more in {check.path} (the diagnostics tool lists them all)")
    parts: list[str] = []
    if lines:
        by = ", ".join(s for s in dict.fromkeys(servers) if s)
        parts.append(
            f"Diagnostics after this change{f' ({by})' if by else ''}:\n" + "\n".join(lines)
        )
    if pending:
        parts.append("[no diagnostics yet: " + "; ".join(pending) + "]")
    return "\n\n".join(parts)
