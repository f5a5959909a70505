"""Long tool output: the model sees head + tail; the whole text is saved for ``read_output``."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from clover_code.fs.private import open_private, private_dir
from clover_code.tools.sandbox.output import cap_head_tail


@dataclass
class OutputSpill:
    """Keeps tool output the model sees within ``limit`` characters; the full
    text goes to a file the model can read in parts with ``read_output``."""

    directory: Path
    limit: int
    saved: dict[str, Path] = field(default_factory=dict)

    def fit(self, call_id: str, text: str, full: str | None = None) -> str:
        """``text`` cut head + tail if it is over the limit, with a note on where
        the full output (``full`` when the tool kept more than it returned) is."""
        whole = full if full is not None and len(full) > len(text) else text
        if len(text) <= self.limit and whole is text:
            return text
        path = self.directory / f"{_safe(call_id)}.txt"
        kept, _ = cap_head_tail(text, self.limit)
        try:
            private_dir(path.parent)
            with open_private(path, append=False) as fh:
                fh.truncate(0)
                fh.write(whole.encode("utf-8", errors="replace"))
        except OSError as exc:
            # The disk being full must not cost the model the result itself.
            return f"{kept}\n[the rest of the output could not be saved: {exc.strerror or exc}]"
        self.saved[call_id] = path
        lines = whole.count("\n") + 1
        # ``whole`` is what the tool kept or streamed live, not always all a command printed.
        return (
            f"{kept}\n[the output as received ({len(whole)} characters, {lines} lines) is saved; "
            f"read it in parts with read_output(id='{call_id}', offset=LINE, limit=LINES)]"
        )


def _safe(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_" else "_" for c in name)[:80] or "output"
