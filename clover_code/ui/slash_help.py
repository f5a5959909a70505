"""What ``/help`` lists: the slash commands, the keys, the user's own keys from
``[keys]``, and Vim's keys in vim mode."""

from __future__ import annotations

from clover_code.config.app_settings import KEY_ACTIONS
from clover_code.ui.command_table import SlashCommand
from clover_code.ui.options import AppOptions
from clover_code.ui.widgets.help_table import Section

__all__ = ["KEYS_HELP", "VIM_HELP", "help_sections"]

KEYS_HELP: list[tuple[str, str]] = [
    ("Enter", "send (queued while a turn runs)"),
    ("Alt+↑", "edit the last queued prompt"),
    ("Shift+Enter, Ctrl+J", "new line"),
    ("↑ ↓", "prompt history"),
    ("Tab", "complete"),
    ("@", "mention a file"),
    ("PageUp PageDown", "scroll the transcript (also with Shift)"),
    ("Ctrl+Home Ctrl+End", "top / end of the transcript"),
    ("Esc", "interrupt (the turn and the background jobs)"),
    ("Ctrl+C twice", "quit"),
    ("Shift+Tab", "next approval mode"),
    ("F2", "denoising view on/off"),
    ("Ctrl+P", "commands"),
]
"""The keys /help lists, each with what it does."""

VIM_HELP: list[tuple[str, str]] = [
    ("Esc", "normal mode (in normal mode: interrupt)"),
    ("i a I A o O", "insert before, after, at the line's start, at its end, on a new line"),
    ("h j k l w b e 0 $ gg G", "move (a count first repeats: 3w)"),
    ("d c y + a move, dd cc yy", "delete, change, copy (lines)"),
    ("x p u", "delete a character, put, undo"),
]
"""What /help adds in vim mode."""


def help_sections(commands: tuple[SlashCommand, ...], options: AppOptions) -> list[Section]:
    """The sections ``/help`` shows: the ``commands``, the keys, and what ``options`` add."""
    rows = [(f"/{c.name} {c.args}".rstrip(), c.help) for c in commands]
    sections: list[Section] = [("Commands:", rows), ("Keys:", KEYS_HELP)]
    mine = options.keymap
    if mine:
        yours = [(keys, KEY_ACTIONS.get(action, action)) for action, keys in mine.items()]
        sections.append(("Your keys ([keys], in place of the defaults above):", yours))
    if options.editor_mode == "vim":
        sections.append(("Vim mode:", VIM_HELP))
    return sections
