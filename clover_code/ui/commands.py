"""The slash commands: one table used by the prompt's completion, /help and the palette."""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import Protocol, runtime_checkable

from textual.command import DiscoveryHit, Hit, Hits, Provider


@dataclass(frozen=True, slots=True)
class SlashCommand:
    """A command the prompt understands."""

    name: str
    help: str
    args: str = ""


COMMANDS: tuple[SlashCommand, ...] = (
    SlashCommand("help", "list the commands and keys"),
    SlashCommand("model", "show the engine and model"),
    SlashCommand("approval", "show or set what may run without asking", "[MODE]"),
    SlashCommand("sandbox", "show where shell commands run"),
    SlashCommand("undo", "revert the last turn's changes (asks first)", "[--force]"),
    SlashCommand("rewind", "go back N turns (asks first)", "N [files|conversation|both]"),
    SlashCommand("retry", "connect to the model server now, or resend the last prompt"),
    SlashCommand("diff", "show what the agent changed this session"),
    SlashCommand("compact", "summarise older turns to free context"),
    SlashCommand("clear", "start a fresh conversation"),
    SlashCommand("sessions", "pick an earlier session of this repository", "[--all]"),
    SlashCommand("resume", "continue an earlier session (a picker without ID)", "[ID|--all]"),
    SlashCommand("fork", "continue in a copy of this session (the original stays)"),
    SlashCommand("plan", "plan mode: explore and write a plan, change nothing", "[TASK]"),
    SlashCommand("review", "review the changes since BASE (default branch), read-only", "[BASE]"),
    SlashCommand("skills", "list the skills the model can load"),
    SlashCommand("cost", "show the tokens used this session"),
    SlashCommand("quit", "save and leave"),
)
BY_NAME = {command.name: command for command in COMMANDS}


def parse(text: str) -> tuple[SlashCommand, str] | None:
    """``(command, argument)`` when ``text`` is a known slash command, else None."""
    if not text.startswith("/"):
        return None
    name, _, arg = text[1:].strip().partition(" ")
    command = BY_NAME.get(name.lower())
    return (command, arg.strip()) if command else None


def complete(prefix: str) -> list[SlashCommand]:
    """Commands whose name starts with ``prefix`` (without the slash)."""
    return [c for c in COMMANDS if c.name.startswith(prefix.lower())]


@runtime_checkable
class RunsSlashCommands(Protocol):
    """An app that runs slash commands typed in its prompt (``CloverApp``)."""

    def run_slash_command(self, text: str) -> None:
        """Run ``/name args`` as if typed."""
        ...


class SlashCommandProvider(Provider):
    """Lists the slash commands in the command palette (Ctrl+P)."""

    async def discover(self) -> Hits:
        for command in COMMANDS:
            yield DiscoveryHit(
                f"/{command.name}", partial(self._run, command.name), help=command.help
            )

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for command in COMMANDS:
            score = matcher.match(f"/{command.name} {command.help}")
            if score > 0:
                yield Hit(
                    score,
                    matcher.highlight(f"/{command.name}"),
                    partial(self._run, command.name),
                    help=command.help,
                )

    def _run(self, name: str) -> None:
        if isinstance(self.app, RunsSlashCommands):
            self.app.run_slash_command(f"/{name}")
