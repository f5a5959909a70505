"""What each slash command does: one method per command, registered on it with
``@TABLE.command``, acting on the app through ``SlashHost`` and drawing on the
transcript and the status bar it is given."""

from __future__ import annotations

from pathlib import Path

from clover_code import protocol as p
from clover_code.protocol import APPROVAL_MODES
from clover_code.ui.command_table import CommandTable, SlashCommand
from clover_code.ui.custom import run_custom, show_skills
from clover_code.ui.export import export
from clover_code.ui.host import SlashHost
from clover_code.ui.slash_help import help_sections
from clover_code.ui.widgets.status_bar import StatusBar
from clover_code.ui.widgets.transcript import Transcript

__all__ = ["COMMANDS", "TABLE", "SlashCommands", "jobs_text"]

TABLE: CommandTable[SlashCommands] = CommandTable()
"""The slash commands, filled by ``@TABLE.command`` on the methods below, in their order."""


def jobs_text(jobs: list[p.JobInfo]) -> str:
    """What ``/jobs`` shows: each job kept, running ones first, and how to stop them."""
    if not jobs:
        return "No background jobs. The agent starts one with the shell tool's background option."
    running = [job for job in jobs if job.state == "running"]
    ended = [job for job in jobs if job.state != "running"]
    lines = [f"Background jobs ({len(running)} running):"]
    for job in running + ended:
        if job.state == "running":
            how = "running"
        elif job.state == "exited":
            how = f"exited with code {job.exit_code}"
        else:
            how = f"{job.state} ({job.reason})" if job.reason else job.state
        lines.append(f"  job {job.id}  {how}  {job.command}")
    if running:
        lines.append("  Esc or Ctrl+C stops every running job (and the turn, if one runs).")
    return "\n".join(lines)


class SlashCommands:
    """``run`` and one method per command (registered in ``TABLE``), acting on ``app``."""

    def __init__(self, app: SlashHost, *, transcript: Transcript, status_bar: StatusBar) -> None:
        self.app = app
        self.transcript = transcript
        self.status_bar = status_bar

    def run(self, text: str) -> None:
        """Run ``/name args``; unknown names get a hint."""
        found = TABLE.find(text)
        if found is None and run_custom(self.app, text):
            return
        if found is None:
            name = text.split()[0] if text.split() else text
            self.transcript.add_note(
                f"unknown command {name}; /help lists them (start with // to send a slash).",
                "warning",
            )
            return
        command, arg = found
        command(self, arg)

    @TABLE.command("help", "list the commands and keys")
    def _cmd_help(self, arg: str) -> None:
        self.transcript.add_help(help_sections(TABLE.rows, self.app.options))

    @TABLE.command("model", "pick the model, or switch to NAME, from the next request on", "[NAME]")
    def _cmd_model(self, arg: str) -> None:
        if self.app.started is None or self.app.bridge.session is None:
            self.transcript.add_note("No engine is connected.", "warning")
            return
        if arg:
            self.app.send(p.SetModel(model=arg))
            return
        self.app.run_worker(self._pick_model())

    async def _pick_model(self) -> None:
        """The model picker: the server's models and the [models] table."""
        from clover_code.ui.widgets.model_picker import ModelPicker

        session = self.app.bridge.session
        started = self.app.started
        if session is None or started is None:
            return
        options, note = await session.models()
        if note is not None:
            self.transcript.add_note(note, "warning")
        if len(options) < 2:
            self.transcript.add_note(f"Engine {started.engine}, model {started.model}.")
            return

        def chosen(option: p.ModelOption | None) -> None:
            if option is not None and not option.current:
                self.app.send(p.SetModel(model=option.name))

        title = f"Models · {started.engine} engine · the next request uses the one picked"
        self.app.push_screen(ModelPicker(options, title), chosen)

    @TABLE.command("approval", "show or set what may run without asking", "[MODE]")
    def _cmd_approval(self, arg: str) -> None:
        if not arg:
            current = self.status_bar.approval or "?"
            modes = ", ".join(self.app.approval_modes)
            self.transcript.add_note(
                f"Approval mode: {current}. Set one with /approval MODE ({modes}) "
                "or cycle with Shift+Tab."
            )
            return
        if arg not in APPROVAL_MODES:
            self.transcript.add_note(
                f"unknown approval mode '{arg}'; choose one of {', '.join(APPROVAL_MODES)}.",
                "warning",
            )
            return
        self.app.send(p.SetApprovalMode(mode=arg))
        self.status_bar.approval = arg

    @TABLE.command("sandbox", "show where shell commands run")
    def _cmd_sandbox(self, arg: str) -> None:
        kind = self.app.started.sandbox if self.app.started else "unknown"
        hint = " Restart with --sandbox docker|bwrap|none to change it."
        self.transcript.add_note(f"Shell commands run in: {kind}.{hint}")

    @TABLE.command("undo", "revert the last turn's changes (asks first)", "[--force]")
    def _cmd_undo(self, arg: str) -> None:
        # the last turn that changed files (the core finds it in its checkpoints)
        back = next((n for n, files in enumerate(reversed(self.app.turn_files), 1) if files), 1)
        from clover_code.ui.undo import confirm_undo

        confirm_undo(self.app, self.transcript, back, arg, last_change=True)

    @TABLE.command("rewind", "go back N turns (asks first)", "N [files|conversation|both]")
    def _cmd_rewind(self, arg: str) -> None:
        # Loaded on first use (as are /fork's and /review's): few sessions need them,
        # and every start would pay their modules.
        from clover_code.ui.rewind import REWIND_CHOICES, rewind

        words = arg.split()
        count = words[0] if words else ""
        what = [w for w in words[1:] if w != "--force"]
        if (
            not count.isdigit()
            or int(count) < 1
            or len(what) > 1
            or not set(what) <= set(REWIND_CHOICES)
        ):
            self.transcript.add_note(
                "Say how many turns to go back and, if you like, what: /rewind 2 "
                "[files|conversation|both] (add --force to override files you changed since).",
                "warning",
            )
            return
        if self.app.turn_running:
            self.transcript.add_note("Interrupt the running turn (Esc) first.", "warning")
            return
        turns = int(count)
        recent = self.app.turn_files[-turns:] if self.app.turn_files else []
        files = sorted({path for turn in recent for path in turn})
        details = [f"Files: {', '.join(files) or '(no file edits recorded in this view)'}"]
        rewind(
            self.app, self.transcript, turns, what[0] if what else "", "--force" in words, details
        )

    @TABLE.command("retry", "connect to the model server now, or resend the last prompt")
    def _cmd_retry(self, arg: str) -> None:
        app = self.app
        if app.retry_open():
            self.transcript.add_note("Connecting to the model server…")
            return
        if app.turn_running:
            self.transcript.add_note("A turn is running; Esc interrupts it.", "warning")
            return
        last = next((op for op in reversed(app.bridge.sent) if isinstance(op, p.UserInput)), None)
        if last is None:
            self.transcript.add_note("Nothing to retry: no prompt was sent yet.")
            return
        app.send_text(last.text if not last.text.startswith("/") else "/" + last.text)

    @TABLE.command("diff", "show what the agent changed this session")
    def _cmd_diff(self, arg: str) -> None:
        self.app.send(p.ShowDiff())

    @TABLE.command("compact", "summarise older turns to free context")
    def _cmd_compact(self, arg: str) -> None:
        self.app.send(p.Compact())
        self.transcript.add_note("Compacting the conversation…")

    @TABLE.command("clear", "start a fresh conversation")
    def _cmd_clear(self, arg: str) -> None:
        self.app.send(p.ClearHistory())
        self.app.turn_files.clear()

        async def clear() -> None:
            await self.transcript.clear()
            self.transcript.add_note("Started a fresh conversation; the old transcript is kept.")

        self.app.run_worker(clear())

    @TABLE.command("sessions", "pick an earlier session of this repository", "[--all]")
    def _cmd_sessions(self, arg: str) -> None:
        from clover_code.ui.session_pick import pick_session

        pick_session(self.app, self.transcript, arg, self._resume_path)

    @TABLE.command("resume", "continue an earlier session (a picker without ID)", "[ID|--all]")
    def _cmd_resume(self, arg: str) -> None:
        from clover_code.ui.session_pick import resume_session

        resume_session(self.app, self.transcript, arg, self._resume_path)

    def open_path(self, path: Path, note: str = "") -> None:
        """Continue in the session stored at ``path`` (closing the current one); ``note``
        is the transcript's first line."""
        self._resume_path(path, note)

    def _resume_path(self, path: Path, note: str = "") -> None:
        if self.app.turn_running:
            self.transcript.add_note("Interrupt the running turn before resuming.", "warning")
            return
        self.app.turn_files.clear()
        self.app.stats.new_session()

        async def reopen() -> None:
            await self.transcript.clear()
            if note:
                self.transcript.add_note(note)
            self.app.open_session(path)

        self.app.run_worker(reopen())

    @TABLE.command("fork", "continue in a copy of this session (the original stays)")
    def _cmd_fork(self, arg: str) -> None:
        from clover_code.ui.rewind import fork

        fork(self.app, self.transcript, self.open_path)

    @TABLE.command("export", "save this session as Markdown or HTML", "[md|html] [FILE]")
    def _cmd_export(self, arg: str) -> None:
        export(self.app, self.transcript, arg)

    @TABLE.command("plan", "plan mode: explore and write a plan, change nothing", "[TASK]")
    def _cmd_plan(self, arg: str) -> None:
        self._cmd_approval("plan")
        self.transcript.add_note(
            "Plan mode: the model explores and writes a plan without changing anything; "
            "you decide afterwards whether to carry it out."
        )
        if arg:
            self.app.send_prompt(arg)

    @TABLE.command("review", "review the changes since BASE (default branch), read-only", "[BASE]")
    def _cmd_review(self, arg: str) -> None:
        from clover_code.ui.review import start_review

        start_review(self.app, self.transcript, arg)

    @TABLE.command("skills", "list the skills the model can load")
    def _cmd_skills(self, arg: str) -> None:
        show_skills(self.app, self.transcript)

    @TABLE.command("jobs", "list the agent's background jobs")
    def _cmd_jobs(self, arg: str) -> None:
        self.transcript.add_note(jobs_text(self.app.jobs))

    @TABLE.command("cost", "show the tokens and money spent this session")
    def _cmd_cost(self, arg: str) -> None:
        s = self.app.stats
        spent = s.cost.total
        if spent is None:
            model = self.status_bar.model
            cost = f'unknown: add [pricing."{model}"] (per million tokens) to your config'
        else:
            cost = s.cost.shown() + (", child agents included" if s.subagents else "")
        self.transcript.add_note(
            f"This session: {s.responses} model responses, {s.completion_tokens:,} tokens "
            f"generated, {s.prompt_tokens:,} tokens in the last prompt. Cost: {cost}."
        )
        if s.experts_per_layer is not None:
            self.transcript.add_note(
                f"Routed experts: {s.experts_per_layer:.1f} distinct per MoE layer per block "
                "in the latest response."
            )
        if s.subagents:
            tokens = sum(c.tokens for c in s.subagents)
            self.transcript.add_note(
                f"Child agents: {len(s.subagents)}, {tokens:,} tokens generated "
                f"(not in the totals above):\n{s.subagents_report()}"
            )

    @TABLE.command("quit", "save and leave")
    def _cmd_quit(self, arg: str) -> None:
        self.app.run_worker(self.app.action_quit())

    def cycle_approval(self) -> None:
        """Shift+Tab: the next approval mode."""
        current = self.status_bar.approval or "ask"
        modes = self.app.approval_modes
        index = modes.index(current) if current in modes else 0
        mode = modes[(index + 1) % len(modes)]
        self.app.send(p.SetApprovalMode(mode=mode))
        self.status_bar.approval = mode


COMMANDS: tuple[SlashCommand, ...] = TABLE.rows
"""Every slash command, in the order /help lists them."""
