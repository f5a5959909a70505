"""The app's own settings, as the app takes them: ``AppOptions``, built from ``Settings``
by ``ui/run.py`` (the app never reads the settings object itself).

``check_options`` refuses, in one sentence each, what the settings model cannot
judge without Textual: a theme Textual does not have, and a ``[keys]`` table
that gives one key to two actions of the same screen.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from textual.binding import Binding, BindingType
from textual.theme import BUILTIN_THEMES

from clover_code.config.app_settings import EditorMode, NotifyMode
from clover_code.errors import ConfigError

if TYPE_CHECKING:
    from clover_code.ui.statusline import StatusLineConfig

__all__ = ["AppOptions", "check_options"]


def _no_status_line() -> StatusLineConfig | None:
    return None


@dataclass(frozen=True, slots=True)
class AppOptions:
    """Theme, keys, editor mode, notifications and status line of one run of the app."""

    theme: str = "textual-dark"
    keymap: Mapping[str, str] = field(default_factory=dict)
    """Key bindings by action (``[keys]``), over the defaults."""
    editor_mode: EditorMode = "default"
    """default, or vim (the prompt's modal editing)."""
    shade_confidence: bool = False
    """Start with the confidence view on (F4 toggles it)."""
    low_confidence: float = 0.5
    """Tokens filled below this are tinted as unsure."""
    notify: NotifyMode = "auto"
    notify_after: float = 60.0
    environ: Mapping[str, str] = field(default_factory=lambda: dict(os.environ))
    """What tells which terminal this is (TERM, TERM_PROGRAM, TMUX...)."""
    statusline: Callable[[], StatusLineConfig | None] = _no_status_line
    """The status line as the settings are when the session opens (a project's
    command applies only once the user trusted it), or None."""
    save_theme: Callable[[str], None] | None = None
    """Saves a theme picked in the app to the user config (raises ``ConfigError``);
    None: not saved."""


def check_options(options: AppOptions, screens: Mapping[str, Sequence[BindingType]]) -> None:
    """Refuse an unknown theme, or a ``[keys]`` table that gives one key to two actions
    of the same screen (``screens``: each screen's bindings, with their ids)."""
    if options.theme not in BUILTIN_THEMES:
        names = ", ".join(sorted(BUILTIN_THEMES))
        raise ConfigError(
            f"theme '{options.theme}' is not one of the app's themes; set theme to one of: {names}."
        )
    for screen, bindings in screens.items():
        owner: dict[str, str] = {}
        for binding in (b for b in bindings if isinstance(b, Binding)):
            name = binding.id or binding.description or binding.action
            keys = options.keymap.get(binding.id, binding.key) if binding.id else binding.key
            for key in (k.strip() for k in keys.split(",")):
                other = owner.setdefault(key, name)
                if other != name and (binding.id in options.keymap or other in options.keymap):
                    raise ConfigError(
                        f"[keys] gives {key} to both {other} and {name} ({screen}); "
                        "choose another key for one of them."
                    )
