"""The slash-command table: one decorator on each command's method registers it."""

from __future__ import annotations

import pytest

from clover_code.ui.command_table import CommandTable, SlashCommand
from clover_code.ui.commands import COMMANDS, complete
from clover_code.ui.slash import TABLE, SlashCommands


class Recorder:
    """An owner of two commands that records what ran."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str]] = []


def test_a_command_is_listed_in_the_order_written_and_runs_its_method() -> None:
    table: CommandTable[Recorder] = CommandTable()

    @table.command("zap", "clear the thing", "[WHAT]")
    def zap(owner: Recorder, arg: str) -> None:
        owner.calls.append(("zap", arg))

    @table.command("add", "add a thing")
    def add(owner: Recorder, arg: str) -> None:
        owner.calls.append(("add", arg))

    assert table.rows == (
        SlashCommand("zap", "clear the thing", "[WHAT]"),
        SlashCommand("add", "add a thing"),
    )
    found = table.find("/ZAP  the cache ")
    assert found is not None
    run, arg = found
    owner = Recorder()
    run(owner, arg)
    assert owner.calls == [("zap", "the cache")]
    assert table.find("zap") is None  # no slash: a prompt, not a command
    assert table.find("/zip") is None


def test_a_name_registered_twice_is_refused() -> None:
    table: CommandTable[Recorder] = CommandTable()
    table.command("add", "add a thing")(lambda owner, arg: None)
    with pytest.raises(ValueError, match="/add is registered twice"):
        table.command("add", "add it again")(lambda owner, arg: None)


def test_every_app_command_runs_a_method_of_the_slash_commands() -> None:
    assert TABLE.rows == COMMANDS
    assert [c.name for c in complete("re")] == ["rewind", "retry", "resume", "review"]
    for command in COMMANDS:
        found = TABLE.find(f"/{command.name}")
        assert found is not None
        run, _ = found
        assert getattr(SlashCommands, run.__name__) is run
