"""The app's keys: its bindings and the actions they run.

Interrupting (Esc), Ctrl+C (twice to quit), quitting (asked twice while child
agents run in the background), the next approval mode (Shift+Tab), the live
denoising and confidence views (F2, F4) and the queued prompt taken back
(Alt+Up). ``KeyedApp`` is the app's base: ``CloverApp`` (``app.py``) makes the
widgets and the session these act on, and sends the Ops.
"""

from __future__ import annotations

import asyncio
from typing import ClassVar

from textual.app import App
from textual.binding import Binding, BindingType

from clover_code import protocol as p
from clover_code.protocol.confidence import NO_CONFIDENCE
from clover_code.ui.app_extras import AppExtras
from clover_code.ui.bridge import EventBridge
from clover_code.ui.clock import Clock
from clover_code.ui.slash import SlashCommands
from clover_code.ui.widgets.composer import Composer
from clover_code.ui.widgets.queued import QueuedPrompts
from clover_code.ui.widgets.status_bar import StatusBar
from clover_code.ui.widgets.transcript import Transcript

__all__ = ["QUIT_TIMEOUT", "QUIT_WINDOW", "KeyedApp"]

QUIT_WINDOW = 2.0
"""Seconds within which a second Ctrl+C quits."""
QUIT_TIMEOUT = 15.0
"""Longest wait for the session to close (sandbox, engine) before leaving anyway."""


class KeyedApp(App[int]):
    """The app's bindings and what each does, on the widgets and the session that
    ``CloverApp`` makes."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "interrupt", "Interrupt", show=False, id="interrupt"),
        Binding(
            "ctrl+c",
            "ctrl_c",
            "Interrupt / quit",
            priority=True,
            show=False,
            id="interrupt_or_quit",
        ),
        Binding("ctrl+q", "quit", "Quit", priority=True, show=False, id="quit"),
        Binding(
            "shift+tab",
            "cycle_approval",
            "Approval mode",
            show=False,
            priority=True,
            id="approval_mode",
        ),
        Binding("f2", "toggle_denoise", "Denoising view", show=False, id="denoise_view"),
        Binding("f4", "toggle_confidence", "Confidence view", show=False, id="confidence_view"),
        Binding("alt+up", "edit_queued", "Edit queued prompt", show=False, id="edit_queued"),
        Binding(
            "ctrl+p",
            "command_palette",
            "Commands",
            show=False,
            priority=True,
            id="command_palette",
        ),
    ]
    """escape: interrupt the turn; ctrl+c: interrupt, twice to quit; ctrl+q: quit;
    shift+tab: next approval mode; f2: live denoising view on/off; f4: the answers and
    diffs shaded by fill confidence, on/off; ctrl+p: commands;
    alt+up: take the last queued prompt back into the prompt. Each id is an action
    ``[keys]`` can bind to other keys."""

    # What the keys act on, made by ``CloverApp`` (documented there).
    transcript: Transcript
    queued: QueuedPrompts
    composer: Composer
    status_bar: StatusBar
    slash: SlashCommands
    bridge: EventBridge
    extras: AppExtras
    jobs: list[p.JobInfo]
    stopped_on_quit: list[p.JobInfo]
    turn_running: bool
    exit_code: int
    confidence_seen: bool

    def __init__(self) -> None:
        super().__init__()
        self._confidence_noted = False
        self._last_ctrl_c = -1e9
        self._quitting = False
        self._quit_warned = -1e9

    def send(self, op: p.Op) -> None:
        """Send an op to the core (``CloverApp`` does)."""
        raise NotImplementedError

    def action_edit_queued(self) -> None:
        """Take the newest queued prompt back into the prompt (edit it, or clear it)."""
        self.queued.restore_last(self.composer.input)

    def action_interrupt(self) -> None:
        """Stop the running turn and the background jobs."""
        if self.turn_running or self._jobs_running():
            self.send(p.Interrupt())

    def _jobs_running(self) -> bool:
        return any(job.state == "running" for job in self.jobs)

    def action_ctrl_c(self) -> None:
        """Interrupt a running turn and the background jobs; a second press within two
        seconds quits."""
        now = Clock.now()
        if now - self._last_ctrl_c < QUIT_WINDOW:
            self.run_worker(self.action_quit())
            return
        self._last_ctrl_c = now
        if self.turn_running or self._jobs_running():
            self.send(p.Interrupt())
        self.notify("Press Ctrl+C again to quit.", timeout=QUIT_WINDOW)

    async def action_quit(self) -> None:
        """Close the session (the transcript is complete) and leave; while child agents
        run in the background, only when asked twice (closing stops them)."""
        if self._quitting:
            return
        running = self.status_bar.background
        now = Clock.now()
        if running and now - self._quit_warned >= QUIT_WINDOW:
            self._quit_warned = now
            agents = f"{running} background agent{'s are' if running > 1 else ' is'}"
            self.notify(
                f"{agents} still running; quit again to stop them and leave.",
                severity="warning",
                timeout=QUIT_WINDOW,
            )
            return
        self._quitting = True
        self.extras.close()
        # Closing the session stops these; they are named once the app is gone.
        self.stopped_on_quit = [job for job in self.jobs if job.state == "running"]
        try:
            await asyncio.wait_for(self.bridge.close(), QUIT_TIMEOUT)
        except TimeoutError:
            self.exit_code = self.exit_code or 1
        self.exit(self.exit_code)

    def action_cycle_approval(self) -> None:
        """Switch to the next approval mode (on the main screen; dialogs keep Shift+Tab)."""
        if len(self.screen_stack) > 1:
            self.screen.focus_previous()
        else:
            self.slash.cycle_approval()

    def action_toggle_confidence(self) -> None:
        """F4: shade the answers and diffs by the confidence each token was filled with."""
        on = not self.transcript.shading
        self.transcript.shade(on)
        self.notify(f"Confidence view {'on' if on else 'off'}.", timeout=2)
        if on:
            self.note_no_confidence()

    def note_no_confidence(self) -> None:
        """Say once that the engine reports no fill confidences, when the view is on and
        no answer so far carried any."""
        if not self.transcript.shading or self.confidence_seen or self._confidence_noted:
            return
        self._confidence_noted = True
        self.notify(NO_CONFIDENCE, timeout=6)

    def action_toggle_denoise(self) -> None:
        """F2: show or hide the live denoising view."""
        denoise = self.transcript.denoise
        denoise.enabled = not denoise.enabled
        self.notify(f"Denoising view {'on' if denoise.enabled else 'off'}.", timeout=2)
