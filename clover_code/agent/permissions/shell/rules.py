"""Shell allow and deny rules: command patterns matched word by word.

A pattern such as ``"git diff *"`` is split like a shell line; a standalone
``*`` stands for any number of words, ``*`` inside a word for any characters.
``allowed`` says whether a parsed command is covered by some pattern, looking
through transparent wrappers only.
"""

from __future__ import annotations

import fnmatch
import os
import re
import shlex
from collections.abc import Sequence
from typing import TYPE_CHECKING

from clover_code.errors import ConfigError

if TYPE_CHECKING:
    from clover_code.agent.permissions.shell.parse import Layer, SimpleCommand

__all__ = ["CommandPattern", "allowed"]


class CommandPattern:
    """A shell rule such as ``"git diff *"``, matched word by word."""

    def __init__(self, text: str, parts: list[re.Pattern[str] | None]) -> None:
        self.text = text
        self.parts = parts

    @classmethod
    def parse(cls, text: str, where: str) -> CommandPattern:
        """A pattern as written in the config (shell quoting allowed)."""
        try:
            words = shlex.split(text)
        except ValueError:
            words = text.split()
        if not words:
            raise ConfigError(f"{where} has an empty pattern; remove it.")
        parts = [None if w == "*" else re.compile(fnmatch.translate(w)) for w in words]
        return cls(text, parts)

    @classmethod
    def prefix(cls, words: Sequence[str]) -> CommandPattern:
        """A pattern for exactly ``words`` followed by any arguments."""
        parts: list[re.Pattern[str] | None] = [re.compile(re.escape(w) + r"\Z") for w in words]
        return cls(" ".join([*words, "*"]), [*parts, None])

    def matches(self, layer: Layer, *, deny: bool = False) -> bool:
        """Whether the layer's words match.

        Deny rules are read generously: a program given by path also matches
        by its bare name, and when more arguments come at run time (``xargs``)
        any rule the known words start is taken to match. Allow rules match
        such a layer only when they end in a standalone ``*``.
        """
        candidates = [layer.argv]
        if deny and "/" in layer.argv[0]:
            candidates.append((os.path.basename(layer.argv[0]), *layer.argv[1:]))
        for words in candidates:
            ends = _match_words(self.parts, words)
            if not layer.open_args and ends[-1]:
                return True
            if layer.open_args and (any(ends) if deny else ends[-1] and self.parts[-1] is None):
                return True
        return False


def _match_words(parts: Sequence[re.Pattern[str] | None], words: Sequence[str]) -> list[bool]:
    """For each ``i``, whether ``parts[:i]`` match all of ``words`` exactly."""
    # reach[j]: the parts so far can consume exactly words[:j].
    reach = [True] + [False] * len(words)
    ends = [reach[-1]]
    for part in parts:
        nxt = [False] * (len(words) + 1)
        if part is None:
            seen = False
            for j, ok in enumerate(reach):
                seen = seen or ok
                nxt[j] = seen
        else:
            for j, word in enumerate(words):
                if reach[j] and part.match(word):
                    nxt[j + 1] = True
        reach = nxt
        ends.append(reach[-1])
    return ends


def allowed(cmd: SimpleCommand, allow: list[CommandPattern]) -> bool:
    """Whether some layer matches an allow rule with only transparent wrappers around it."""
    for layer in cmd.layers:
        if not layer.dynamic and any(pattern.matches(layer) for pattern in allow):
            return True
        if not layer.transparent:
            return False
    return False
