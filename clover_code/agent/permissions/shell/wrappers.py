"""Programs that run other programs, and how to find the program they run.

``WRAPPERS`` says, for each wrapper, which options take a value, so that
``skip_options`` can find where the wrapped command starts (``timeout -k 5
60 pytest`` starts at ``pytest``). It is deliberately strict: an option not
listed here makes the whole command line need approval, since guessing
wrong would let a rule judge the wrong program.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = [
    "ASSIGNMENT",
    "FIND_EXEC",
    "RISKY_VARS",
    "SHELLS",
    "WRAPPERS",
    "Word",
    "Wrapper",
    "git_subcommand",
    "shell_script",
    "skip_options",
]

# env and sudo take any NAME=VALUE word before the program as an assignment,
# names bash cannot spell among them (BASH_FUNC_f%%=... defines a function).
ASSIGNMENT = re.compile(r"^[^=\-][^=]*=")
FIND_EXEC = frozenset({"-exec", "-execdir", "-ok", "-okdir"})
SHELLS = frozenset({"bash", "sh", "zsh", "dash", "ksh", "ash"})
# Variables that change which program runs or what it loads: a command that
# sets one is not the plain command a rule names.
RISKY_VARS = re.compile(
    r"^(PATH|IFS|ENV|BASH_ENV|SHELLOPTS|BASHOPTS|PS4|PROMPT_COMMAND|CDPATH|HOME|"
    r"LD_\w*|DYLD_\w*|GIT_\w*|PYTHON\w*|NODE_\w*|PERL\w*|RUBY\w*|JAVA_TOOL_OPTIONS|"
    r"BASH_FUNC_.*|.*[^A-Za-z0-9_].*)$"
)


@dataclass(frozen=True, slots=True)
class Word:
    """A shell word after quote removal; ``literal`` is False when bash would still
    expand it at run time (variables, substitutions, globs, braces)."""

    value: str
    literal: bool


@dataclass(frozen=True, slots=True)
class Wrapper:
    """How a wrapper's options are read: which take a value, which end it."""

    short_args: str = ""
    short_flags: str = ""
    long_args: frozenset[str] = frozenset()
    long_flags: frozenset[str] = frozenset()
    positionals: int = 0
    assignments: bool = False
    transparent: bool = True
    open_args: bool = False
    numeric_flag: bool = False
    final_flags: str = ""
    """Flags after which the wrapper runs nothing (``command -v``)."""


def _long(*names: str) -> frozenset[str]:
    return frozenset(f"--{n}" for n in names)


WRAPPERS: dict[str, Wrapper] = {
    "env": Wrapper(
        short_args="uC",
        short_flags="i0v",
        long_args=_long("unset", "chdir"),
        long_flags=_long("ignore-environment", "null"),
        assignments=True,
    ),
    "timeout": Wrapper(
        short_args="sk",
        short_flags="v",
        long_args=_long("signal", "kill-after"),
        long_flags=_long("preserve-status", "foreground", "verbose"),
        positionals=1,
    ),
    "nice": Wrapper(short_args="n", long_args=_long("adjustment"), numeric_flag=True),
    "nohup": Wrapper(),
    "time": Wrapper(short_flags="p"),
    "coproc": Wrapper(),
    "builtin": Wrapper(),
    "command": Wrapper(short_flags="p", final_flags="vV"),
    "exec": Wrapper(short_args="a", short_flags="cl"),
    "stdbuf": Wrapper(short_args="ioe", long_args=_long("input", "output", "error")),
    "ionice": Wrapper(short_args="cn", short_flags="t"),
    "setsid": Wrapper(short_flags="cfw"),
    "xargs": Wrapper(
        short_args="adEILnPs",
        short_flags="0oprtx",
        long_args=_long(
            "arg-file", "delimiter", "eof", "max-lines", "max-args", "max-procs", "max-chars"
        ),
        long_flags=_long("null", "no-run-if-empty", "verbose", "interactive", "exit"),
        open_args=True,
    ),
    "sudo": Wrapper(
        short_args="ughpCDrtTUR",
        short_flags="EHnPSbiksABN",
        long_args=_long(
            "user",
            "group",
            "host",
            "prompt",
            "close-from",
            "chdir",
            "role",
            "type",
            "command-timeout",
            "other-user",
            "chroot",
        ),
        long_flags=_long(
            "preserve-env",
            "set-home",
            "non-interactive",
            "login",
            "shell",
            "stdin",
            "background",
            "askpass",
            "reset-timestamp",
            "remove-timestamp",
        ),
        assignments=True,
        transparent=False,
    ),
    "doas": Wrapper(short_args="uC", short_flags="ns", transparent=False),
}


def skip_options(words: Sequence[Word], spec: Wrapper) -> tuple[int | None, str | None]:
    """Where the wrapped program's words start (None when the wrapper runs none), and
    the problem found, if any: an option this table does not know fails closed."""
    i = 1
    while i < len(words):
        word = words[i]
        value = word.value
        if not word.literal:
            break
        if value == "--":
            i += 1
            break
        if spec.assignments and ASSIGNMENT.match(value):
            i += 1
        elif value.startswith("--"):
            option, equals, _ = value.partition("=")
            if option in spec.long_args:
                i += 1 if equals else 2
            elif option in spec.long_flags:
                i += 1
            else:
                return None, _unknown(words[0].value, value)
        elif value.startswith("-") and len(value) > 1:
            if spec.numeric_flag and value[1:].isdigit():
                i += 1
                continue
            step = 1
            for position, char in enumerate(value[1:], start=2):
                if char in spec.final_flags:
                    return None, None
                if char in spec.short_args:
                    step = 1 if position < len(value) else 2
                    break
                if char not in spec.short_flags:
                    return None, _unknown(words[0].value, value)
            i += step
        else:
            break
    return i + spec.positionals, None


_GIT_ARGS = frozenset({"-C", "-c", "--git-dir", "--work-tree", "--namespace", "--exec-path"})


def git_subcommand(words: Sequence[Word]) -> int | None:
    """Where git's sub-command starts when global options come first (``git -C dir
    push``), so that rules can see ``git push``; None when there are none."""
    i = 1
    while i < len(words) and words[i].value.startswith("-") and words[i].literal:
        option, equals, _ = words[i].value.partition("=")
        i += 2 if option in _GIT_ARGS and not equals else 1
    return i if 1 < i < len(words) else None


def _unknown(wrapper: str, option: str) -> str:
    return f"'{wrapper}' has an option this check does not know ({option})"


def shell_script(words: Sequence[Word]) -> Word | None:
    """The script of ``bash -c SCRIPT`` (``-lc``, ``-o pipefail -c`` and the like
    allowed), or None when the shell runs a file or reads standard input."""
    seen_c = False
    takes_value = False
    for word in words[1:]:
        value = word.value
        if takes_value:
            takes_value = False
            continue
        if value in ("-o", "+o", "-O", "+O"):
            takes_value = True
        elif value.startswith("-") and not value.startswith("--") and "c" in value:
            seen_c = True
        elif not value.startswith(("-", "+")):
            return word if seen_c else None
    return None
