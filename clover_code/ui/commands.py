"""The slash commands as the prompt's completion and the command palette offer them.

The table itself is built where the commands are: ``@TABLE.command`` on each
method of ``SlashCommands`` (``slash.py``).
"""

from __future__ import annotations

from functools import partial
from typing import Protocol, runtime_checkable

from textual.command import DiscoveryHit, Hit, Hits, Provider

from clover_code.ui.command_table import SlashCommand
from clover_code.ui.slash import COMMANDS

__all__ = ["COMMANDS", "SendsText", "SlashCommand", "SlashCommandProvider", "complete"]


def complete(prefix: str) -> list[SlashCommand]:
    """Commands whose name starts with ``prefix`` (without the slash)."""
    return [c for c in COMMANDS if c.name.startswith(prefix.lower())]


@runtime_checkable
class SendsText(Protocol):
    """An app that acts on text as if the user sent it from the prompt (``CloverApp``)."""

    def send_text(self, text: str) -> None:
        """Act on ``text``: ``/name args`` runs that command."""
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
        if isinstance(self.app, SendsText):
            self.app.send_text(f"/{name}")
