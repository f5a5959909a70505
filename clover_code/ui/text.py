"""Make untrusted text safe and bounded before it reaches a widget.

Model output, tool output and diffs can hold control bytes, escape
sequences, binary garbage or megabyte-long lines; each is shown cut and
marked, never passed to the terminal raw.
"""

from __future__ import annotations

import re

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)")


def clean(text: str) -> str:
    """``text`` with ANSI escapes removed and other control characters shown as ``�``.

    Tabs and newlines are kept; carriage returns are dropped.
    """
    text = _ANSI.sub("", text.replace("\r\n", "\n"))
    return _CONTROL.sub(lambda m: "" if m.group() == "\r" else "\ufffd", text)


def looks_binary(text: str) -> bool:
    """Whether text is mostly unprintable (decoded binary output)."""
    sample = text[:4096]
    if not sample:
        return False
    bad = sum(1 for ch in sample if ch == "\ufffd" or (ord(ch) < 32 and ch not in "\n\t\r"))
    return bad / len(sample) > 0.1


def cut_line(line: str, limit: int) -> str:
    """One line, at most ``limit`` characters, saying how much was cut."""
    if len(line) <= limit:
        return line
    return f"{line[:limit]} … [{len(line) - limit:,} more characters cut]"


def cut_lines(text: str, max_lines: int, line_limit: int = 500) -> tuple[list[str], int]:
    """The first ``max_lines`` lines of ``text`` (each cut to ``line_limit``), and how many
    lines were left out."""
    lines: list[str] = []
    start = 0
    total = text.count("\n") + (0 if text.endswith("\n") else 1) if text else 0
    while len(lines) < max_lines and start < len(text):
        end = text.find("\n", start)
        if end < 0:
            end = len(text)
        lines.append(cut_line(text[start:end], line_limit))
        start = end + 1
    return lines, max(0, total - len(lines))


def human_count(n: int) -> str:
    """1234 -> ``1.2k``, 5_000_000 -> ``5.0M``."""
    if n < 1000:
        return str(n)
    if n < 1_000_000:
        return f"{n / 1000:.1f}k"
    return f"{n / 1_000_000:.1f}M"
