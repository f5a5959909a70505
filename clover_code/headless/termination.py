"""SIGTERM in a headless run: handled as Ctrl+C is, remembered for the exit code (143)."""

from __future__ import annotations

import asyncio
import signal

from clover_code.errors import ExitCode


class Termination:
    """SIGTERM while the task runs (when ``enabled``: the process's own run): cancel
    it as Ctrl+C does, and remember why."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        self.received = False
        self._task = asyncio.current_task()

    def _on_signal(self) -> None:
        if not self.received and self._task is not None:
            self.received = True
            self._task.cancel()

    def __enter__(self) -> Termination:
        if self.enabled:
            asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, self._on_signal)
        return self

    def __exit__(self, *_exc: object) -> None:
        if self.enabled:
            asyncio.get_running_loop().remove_signal_handler(signal.SIGTERM)

    def exit_code(self) -> ExitCode:
        """The exit code of an interrupted run."""
        return ExitCode.TERMINATED if self.received else ExitCode.INTERRUPTED
