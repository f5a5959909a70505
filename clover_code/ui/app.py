"""The clover-code app: the transcript above, the prompt and status line below.

The app holds no core objects but an ``EventBridge``: protocol events come in
as ``SessionEvents`` batches and are handed to the widgets by ``TurnEvents``
(``turn_events.py``); everything the user asks for leaves as a protocol
``Op``. Slash commands live in ``slash.py``. None of those parts imports
the app: each is given the widgets it draws on and sees the app through a
narrow interface (``host.py``). The keys and what they do are the app's base
class, ``KeyedApp`` (``app_keys.py``).
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
from pathlib import Path
from typing import TYPE_CHECKING

from textual import events, on, work
from textual.app import App, ComposeResult
from textual.worker import Worker, WorkerState

from clover_code import protocol as p
from clover_code.ui.app_extras import AppExtras
from clover_code.ui.app_keys import KeyedApp
from clover_code.ui.bridge import EventBridge, SessionEvents, SessionFactory, SessionFailed
from clover_code.ui.commands import SlashCommandProvider
from clover_code.ui.custom import completions
from clover_code.ui.file_index import FileIndex
from clover_code.ui.history import show_history
from clover_code.ui.host import Reviewer
from clover_code.ui.images import attached_images
from clover_code.ui.options import AppOptions
from clover_code.ui.reports import alert
from clover_code.ui.server_wait import delay, not_ready
from clover_code.ui.slash import SlashCommands
from clover_code.ui.turn_events import TurnEvents
from clover_code.ui.turn_stats import TurnStats
from clover_code.ui.widgets.composer import Composer
from clover_code.ui.widgets.prompt_input import PromptInput
from clover_code.ui.widgets.queued import QueuedPrompts
from clover_code.ui.widgets.status_bar import StatusBar
from clover_code.ui.widgets.transcript import Transcript
from clover_code.ui.widgets.working_line import WorkingLine

if TYPE_CHECKING:
    from clover_code.ui.widgets.trust import TrustQuestion

WARM_AFTER = 0.3
"""Seconds after the open session is shown before the Markdown and diff renderers warm up."""


class CloverApp(KeyedApp):
    """A terminal coding agent; ``run`` returns the process exit code."""

    CSS_PATH = "app.tcss"
    TITLE = "clover-code"
    COMMANDS = App.COMMANDS | {SlashCommandProvider}

    def __init__(
        self,
        factory: SessionFactory,
        *,
        cwd: Path,
        sessions_dir: Path | None = None,
        resume: Path | None = None,
        show_denoising: bool = True,
        git_status: bool = True,
        trust: TrustQuestion | None = None,
        reviewer: Reviewer | None = None,
        approval_modes: tuple[p.ApprovalMode, ...] = p.APPROVAL_MODES,
        options: AppOptions | None = None,
    ) -> None:
        super().__init__()
        self.options = options or AppOptions()
        """Theme, keys, editor mode, notifications and status line (``ui/options.py``)."""
        self._trust = trust
        self.reviewer = reviewer
        """Runs ``/review`` in a read-only session of its own (None: not available)."""
        self.approval_modes = approval_modes
        """The approval modes Shift+Tab cycles through (those an administrator allows)."""
        self.cwd = cwd
        self.sessions_dir = sessions_dir
        self.bridge = EventBridge(self.post_message, factory)
        self.started: p.SessionStarted | None = None
        self.turn_running = False
        self.exit_code = 0
        self.stats = TurnStats()
        self.turn_files: list[list[str]] = []
        self.turn_prompts: list[str] = []
        """What the user sent for each turn of this run (put back by a rewind)."""
        self.rewinding = False
        """A /rewind was sent (its answer puts the prompt back; /undo's does not)."""
        self.jobs: list[p.JobInfo] = []
        """The session's background jobs as it last reported them."""
        self.stopped_on_quit: list[p.JobInfo] = []
        """The jobs that were running when the user quit (closing the session stopped them)."""
        self._resume = resume
        self._show_denoising = show_denoising
        self.confidence_seen = False
        """Some answer carried fill confidences (the engine reports them)."""
        self._git_status = git_status
        self._open_failed = False
        self._early: list[p.UserInput] = []
        self._warming = False
        self._retry_now = asyncio.Event()
        self.transcript = Transcript(id="transcript")
        self.working = WorkingLine(id="working")
        self.queued = QueuedPrompts(id="queued")
        self.composer = Composer(id="composer", vim=self.options.editor_mode == "vim")
        self.status_bar = StatusBar(id="status")
        self.slash = SlashCommands(self, transcript=self.transcript, status_bar=self.status_bar)
        self.turn_events = TurnEvents(
            self,
            transcript=self.transcript,
            working=self.working,
            status_bar=self.status_bar,
            queued=self.queued,
            prompt=self.composer.input,
        )
        self.extras = AppExtras(
            self, self.options, status_bar=self.status_bar, transcript=self.transcript
        )
        """Notifications, the status line and the saved theme."""

    def compose(self) -> ComposeResult:
        yield self.transcript
        yield self.working
        yield self.queued
        yield self.composer
        yield self.status_bar

    def on_mount(self) -> None:
        self.extras.mount()
        self.transcript.denoise.enabled = self._show_denoising
        self.transcript.low_confidence = self.options.low_confidence
        self.transcript.shading = self.options.shade_confidence
        self.composer.input.focus()
        self.run_worker(self.bridge.pump(), name="bridge", group="bridge")
        # after the first paint: opening imports the engine and tools and starts the sandbox
        if self._trust is not None:  # the session's settings depend on the answer
            from clover_code.ui.widgets.trust import TrustScreen

            self.push_screen(TrustScreen(self._trust.files), self._trust_answered)
        else:
            self.call_after_refresh(self.open_session, self._resume)
        self.call_after_refresh(self._index_files)

    def _trust_answered(self, trusted: bool | None) -> None:
        if trusted and self._trust is not None:
            problem = self._trust.accept()
            if problem is not None:
                self.notify(problem, severity="error", timeout=10)
        self.open_session(self._resume)

    # ------------------------------------------------------------ workers

    @work(group="session", exclusive=True)
    async def open_session(self, resume: Path | None) -> None:
        """Open (or resume) the session; a server still starting is retried with backoff
        (what the user types meanwhile is kept), any other failure is shown and the app stays."""
        from clover_code.errors import CloverError

        if resume is not None:
            show_history(self.transcript, resume)
        self._open_failed = False
        attempt = 0
        while True:
            try:
                await self.bridge.open(resume)
                break
            except CloverError as exc:
                attempt += 1
                if not not_ready(exc):
                    self._open_failed = True
                    self.post_message(SessionFailed(str(exc), int(exc.exit_code)))
                    return
                wait = delay(attempt)
                self.status_bar.model = "waiting for the server…"
                self.transcript.waiting_note(
                    f"The model server is not ready ({exc}). Retrying in {wait:.0f} s "
                    f"(attempt {attempt}); /retry tries now. What you type is kept "
                    "and sent once it answers."
                )
                self._retry_now.clear()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._retry_now.wait(), wait)
        self.composer.custom = completions(self)
        self.extras.session_opened()
        # After the paint that shows the open session, once the writer thread has had a
        # moment to put it on the terminal: the warm-up thread holds the interpreter for
        # some 50 ms, and neither that paint nor the frame's writing should wait for it.
        # A prompt sent before then is about to be answered: then at once (``send_prompt``).
        wait = 0.0 if self._early else WARM_AFTER
        self.call_after_refresh(self.set_timer, wait, self._warm)
        if attempt:
            retries = "1 retry" if attempt == 1 else f"{attempt} retries"
            self.transcript.waiting_done(f"The model server answered after {retries}.")
        for op in self._early[:1]:  # one turn at a time; the rest are queued
            await self.bridge.submit(op)
        self._early.clear()

    def retry_open(self) -> bool:
        """``/retry`` with no session: try to connect now (False when a session is open)."""
        if self.bridge.session is not None:
            return False
        if self._open_failed:
            self.open_session(self._resume)
        else:
            self._retry_now.set()
        return True

    @work(thread=True, group="files", exclusive=True)
    def _index_files(self) -> None:
        from clover_code.fs.workspace_root import find_root

        root, _ = find_root(self.cwd)
        self.call_from_thread(self._set_files, FileIndex.build(root))

    def _set_files(self, index: FileIndex) -> None:
        # A method, not ``setattr``: Textual counts a callback's parameters, and for a
        # builtin that means parsing its text signature (the tokenizer's patterns, ~3 ms).
        self.composer.files = index

    def _warm(self) -> None:
        """Warm the renderers, once."""
        if not self._warming:
            self._warming = True
            self._warm_renderers()

    @work(thread=True, group="warm", exclusive=True)
    def _warm_renderers(self) -> None:
        # The first answer and the first diff would otherwise pay the Markdown parser's
        # and the highlighter's imports (markdown-it, lexer tables, the theme), and the
        # first turn the transcript's entries (``Transcript`` loads them when first
        # added), on the event loop: a visible pause mid-turn. Done once the session is
        # open and shown, so that it competes with neither.
        from clover_code.ui.widgets.answer_parts import markdown
        from clover_code.ui.widgets.diff_view import render_diff

        for entry in ("answer", "reasoning", "subagent_card", "user_message"):  # +tool_card
            importlib.import_module(f"clover_code.ui.widgets.{entry}")

        markdown("*warm*")
        render_diff("--- a/x.py\n+++ b/x.py\n@@ -1 +1 @@\n-x = 1\n+x = 2\n", 8)

    @work(thread=True, group="git", exclusive=True)
    def refresh_git(self) -> None:
        """Read the branch and whether the work tree is dirty (in a thread)."""
        if not self._git_status:
            return
        from clover_code.git.safe import run_git

        try:
            out = run_git("status", "--porcelain=v1", "-b", cwd=self.cwd, check=False, timeout=10)
        except OSError:
            return
        lines = out.stdout.splitlines() if out.returncode == 0 else []
        if not lines:
            return
        head = lines[0].removeprefix("## ")
        branch = head.split("...")[0].replace("No commits yet on ", "")
        self.call_from_thread(self._set_git, branch, len(lines) > 1)

    def _set_git(self, branch: str, dirty: bool) -> None:
        self.status_bar.branch = branch
        self.status_bar.dirty = dirty

    @on(Worker.StateChanged)
    def _worker_failed(self, event: Worker.StateChanged) -> None:
        if event.state == WorkerState.ERROR and event.worker.group in ("bridge", "session"):
            error = event.worker.error
            alert(self.transcript, str(error), "internal error")
            self.transcript.add_note(f"internal error: {error!r}; the session stopped.", "error")

    # ------------------------------------------------------------ events

    @on(SessionFailed)
    def _session_failed(self, event: SessionFailed) -> None:
        self.exit_code = event.exit_code
        self.status_bar.model = "no engine"
        alert(self.transcript, event.message, "clover-code cannot start")
        self.transcript.add_note(event.message, "error")
        self.queued.restore_all(self.composer.input)  # kept for /retry, never dropped

    @on(SessionEvents)
    def _session_events(self, message: SessionEvents) -> None:
        queued = bool(self.queued.items)  # the next one starts when this turn ends
        try:
            self.turn_events.apply_events(message.events)
        finally:
            self.bridge.batch_handled()
        self.extras.saw(message.events, queued=queued)

    async def on_event(self, event: events.Event) -> None:
        if isinstance(event, events.Key | events.Paste) and not event.is_forwarded:
            self.extras.notifier.user_active()  # the user is here: the prompt's wait is over
        elif isinstance(event, events.AppBlur):
            self.extras.notifier.focus_lost()
        await super().on_event(event)

    def write_terminal(self, sequence: str) -> None:
        """Write an escape sequence to the terminal, in order with the frames (the driver's
        writer thread); nothing when there is no terminal (headless tests)."""
        driver = self._driver
        if driver is not None and not self.is_headless:
            driver.write(sequence)

    # ------------------------------------------------------------ input

    @on(PromptInput.Submitted)
    def _submitted(self, event: PromptInput.Submitted) -> None:
        self.send_text(event.text)

    @on(PromptInput.EditorModeChanged)
    def _editor_mode(self, event: PromptInput.EditorModeChanged) -> None:
        self.status_bar.editor_mode = event.mode.upper()

    @on(PromptInput.ScrollTranscript)
    def _scroll_transcript(self, event: PromptInput.ScrollTranscript) -> None:
        scroll = {
            "page_up": self.transcript.scroll_page_up,
            "page_down": self.transcript.scroll_page_down,
            "home": self.transcript.scroll_home,
            "end": self.transcript.scroll_end,
        }[event.where]
        scroll(animate=False)

    def send_text(self, text: str) -> None:
        """Act on what the user sent: a slash command, or a prompt that starts a turn."""
        if text.startswith("/") and not text.startswith("//"):
            self.slash.run(text.strip())
            return
        self.send_prompt(text)

    def send_prompt(self, text: str) -> None:
        """Send ``text`` as a prompt (queued while a turn runs); a custom command's
        ``/name args`` comes here unchanged, for the session to expand."""
        if self.bridge.session is None and self._open_failed:
            self.notify("No session is open; see the error above.", severity="error")
            if not self.composer.input.text:
                self.composer.input.load_text(text)  # never drop what was typed
            return
        if self.turn_running or (self.bridge.session is None and self._early):
            self.queued.push(text)  # sent when the running (or waiting) turn ends
            return
        images, problem = attached_images(text, self._workspace())
        if problem is not None:
            self.transcript.add_note(problem, "warning")
            if not self.composer.input.text:
                self.composer.input.load_text(text)  # never drop what was typed
            return
        self.transcript.add_user(text)
        self.transcript.anchor()
        if images:
            self.transcript.add_note(f"Attached {', '.join(i.source for i in images)}.")
        text = text.removeprefix("/") if text.startswith("//") else text
        op = p.UserInput(text=text, images=tuple(images))
        if self.bridge.session is None:
            self._early.append(op)  # typed while the session opens: sent once it is open
            return
        self._warm()
        self.send(op)

    def _workspace(self) -> Path:
        """The workspace root (what relative ``@`` paths are read from)."""
        if self.started is not None:
            return Path(self.started.cwd)
        from clover_code.fs.workspace_root import find_root

        return find_root(self.cwd)[0]

    def send(self, op: p.Op) -> None:
        """Send an op to the core (in order, off the message handler)."""
        if isinstance(op, p.ApprovalDecision):
            self.extras.answered(op.request_id)
        self.run_worker(self.bridge.submit(op), group="ops")
