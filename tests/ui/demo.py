"""Run the app on a replayed scene in this terminal, to look at it: ``python -m tests.ui.demo
tool_with_diff`` (scenes: streaming, tool_with_diff, approval, error)."""

from __future__ import annotations

import sys

from tests.ui import scenes
from tests.ui.fakes_ui import replay_app


def main() -> None:
    scene = getattr(scenes, sys.argv[1] if len(sys.argv) > 1 else "tool_with_diff")
    replay_app(scenes.OPEN, [scene(), scene()]).run()


if __name__ == "__main__":
    main()
