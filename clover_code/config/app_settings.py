"""The app's part of the settings: theme, keys, editor mode, notifications, status line.

``AppSettings`` holds these fields; ``clover_code.config.settings.Settings``
inherits them. Only the app reads them (the Notification hook's timing,
``notify_after``, applies to ACP too). Key names are checked here without
Textual: a modifier list (``ctrl+``, ``shift+``, ``alt+``...) and one key,
either a single character, a named key (``escape``, ``f5``, ``pageup``) or a
character's Unicode name in Textual's spelling (``question_mark``).
"""

# Annotations are objects here, not text (no ``from __future__ import annotations``):
# pydantic reads every field's, and text would be compiled and evaluated at each start.

import unicodedata
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

__all__ = ["KEY_ACTIONS", "AppSettings", "EditorMode", "NotifyMode", "key_problem"]

NotifyMode = Literal["auto", "bell", "osc", "off"]
EditorMode = Literal["default", "vim"]

KEY_ACTIONS: dict[str, str] = {
    "interrupt": "stop the running turn (Escape)",
    "interrupt_or_quit": "stop the running turn; twice quits (Ctrl+C)",
    "quit": "save and leave (Ctrl+Q)",
    "approval_mode": "next approval mode (Shift+Tab)",
    "denoise_view": "denoising view on/off (F2)",
    "confidence_view": "answers and diffs shaded by fill confidence, on/off (F4)",
    "edit_queued": "take the last queued prompt back (Alt+Up)",
    "command_palette": "the command palette (Ctrl+P)",
}
"""The actions ``[keys]`` can bind, with what each does (and its default key). The
dialogs keep their own letters (an approval is always y, a, A or n)."""

_MODIFIERS = frozenset({"ctrl", "shift", "alt", "meta", "super", "hyper"})
_NAMED = frozenset(
    {
        "escape", "enter", "tab", "space", "backspace", "delete", "insert", "home", "end",
        "pageup", "pagedown", "up", "down", "left", "right",
        *(f"f{n}" for n in range(1, 25)),
    }
)  # fmt: skip


def key_problem(key: str) -> str | None:
    """Why ``key`` (one key, or several joined by commas) is not a key, or None."""
    for one in key.split(","):
        one = one.strip()
        if not one:
            return f"'{key}' has an empty key; write keys like ctrl+x or f5, comma-separated"
        if len(one) == 1:  # "+" or "," alone: the character itself
            continue
        *mods, base = one.split("+")
        if not base:
            return f"'{one}' has no key after its modifiers"
        unknown = [m for m in mods if m.lower() not in _MODIFIERS]
        if unknown:
            return (
                f"'{unknown[0]}' in '{one}' is not a modifier (use {', '.join(sorted(_MODIFIERS))})"
            )
        if len(base) == 1 or base.lower() in _NAMED or _unicode_name(base):
            continue
        return f"'{base}' in '{one}' is not a key name (e.g. a, f5, escape, pageup, question_mark)"
    return None


def _unicode_name(name: str) -> bool:
    try:
        unicodedata.lookup(name.replace("_", " ").upper())
    except KeyError:
        return False
    return True


class AppSettings(BaseModel):
    """The settings of the terminal app (and the notifications of ACP)."""

    # The same config as Settings (clover_code.config.field_docs reads the docstrings).
    model_config = ConfigDict(
        extra="forbid",
        validate_default=True,
        protected_namespaces=(),
        # Built when first used: only Settings, which inherits these fields, is.
        defer_build=True,
    )

    theme: str = Field("textual-dark", min_length=1)
    """The app's colour theme: one of Textual's (textual-dark, textual-light, nord,
    gruvbox, solarized-light, catppuccin-latte, ...); a choice made in the command
    palette is saved here in your user config."""

    keys: dict[str, str] = Field(default_factory=dict)
    """Key bindings by action, e.g. [keys] interrupt = "ctrl+g", quit = "ctrl+x,f10"
    (docs/themes-and-keys.md lists the actions)."""

    editor_mode: EditorMode = "default"
    """How the prompt edits: default, or vim (normal and insert modes)."""

    shade_confidence: bool = False
    """Shade the answer and each edit's diff in the app by the confidence each token was
    filled with (the hf engine or a clover-code serve; toggled with F4)."""

    notify: NotifyMode = "auto"
    """How the terminal tells you a turn ended or an approval waits while you are away:
    auto (a desktop notification where the terminal shows one, else the bell), bell,
    osc (always the escape sequence), or off."""

    notify_after: float = Field(60.0, ge=0)
    """Seconds a wait (an approval, the prompt after a turn) lasts before it notifies
    even while the terminal has focus (0: at once); ACP notifies after this too."""

    statusline_command: str | None = Field(None, min_length=1)
    """A program whose first line of output is shown in the status bar; it gets the
    session's state as JSON on stdin (a project file sets it only once trusted)."""

    statusline_interval: int = Field(300, ge=50, le=600_000)
    """Milliseconds at least between two runs of statusline_command."""

    statusline_timeout: float = Field(2.0, gt=0, le=60)
    """Seconds statusline_command may take; a slower one is stopped and not run again."""

    @field_validator("keys")
    @classmethod
    def _known_actions(cls, value: dict[str, str]) -> dict[str, str]:
        for action, key in value.items():
            if action not in KEY_ACTIONS:
                known = ", ".join(KEY_ACTIONS)
                raise ValueError(f"[keys] names the unknown action '{action}' (actions: {known})")
            problem = key_problem(key)
            if problem is not None:
                raise ValueError(f"[keys] {action}: {problem}")
        return value
