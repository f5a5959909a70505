"""The Textual front end. Import ``clover_code.ui.run`` lazily: the core never loads Textual.

Importing this package sets the screen's refresh rate before Textual loads:
120 repaints a second at most instead of Textual's 60. A key typed while an
answer streams is drawn at the next repaint, and after a long repaint
Textual waits one to two periods for the next; at 60 that put the echo p95
at ~50 ms while streaming at Clover's speed, at 120 it is ~27 ms for the
same CPU (``bench/ui_stream.py``). ``TEXTUAL_FPS`` set by the user wins.
"""

import os
import sys


def _refresh_rate(fps: str = "120") -> None:
    if "textual" in sys.modules:
        return  # loaded already (by a host program): leave its settings alone
    ours = "TEXTUAL_FPS" not in os.environ
    if ours:
        os.environ["TEXTUAL_FPS"] = fps
    try:
        import textual.constants  # noqa: F401  (reads TEXTUAL_FPS once, now)
    finally:
        if ours:  # not inherited by the commands the agent runs
            del os.environ["TEXTUAL_FPS"]


_refresh_rate()
