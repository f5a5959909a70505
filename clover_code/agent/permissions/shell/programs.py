"""What known programs write, and which of their arguments are code.

``program_writes`` finds the files a program is told to write through its
options and operands (``sort -o F``, ``sed -i F``, ``dd of=F``, ``cp A F``,
``git diff --output=F``, ``tar -C DIR``...), so that a rule that allows the
program never also allows writing anywhere: a write is judged like a
redirection. ``program_problem`` says when an argument is a small program of
its own that the check cannot read (``sed 'e rm x'``, ``awk '{system(...)}'``,
``git -c alias.x='!rm x'``); such a command is not fully understood.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass

from clover_code.agent.permissions.shell.wrappers import Word

__all__ = ["NOT_FILES", "Write", "operands", "program_problem", "program_writes"]

NOT_FILES = frozenset({"/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty"})


@dataclass(frozen=True, slots=True)
class Write:
    """A file (or directory) a command writes into or works in; ``target`` None
    when it is only known at run time. ``via`` says how, for messages."""

    target: str | None
    via: str = "a redirection"


# Long options that name an output file or directory, whatever the program.
_OUTPUT_LONG = frozenset(
    {
        "--output",
        "--output-file",
        "--output-document",
        "--output-dir",
        "--output-directory",
        "--outfile",
        "--out-file",
        "--outdir",
        "--log-file",
        "--target-directory",
        "--directory-prefix",
        "--append-output",
        "--dump-header",
        "--cookie-jar",
        "--trace",
        "--trace-ascii",
        "--stderr",
        "--save-cookies",
    }
)
# Per program: short options whose value is a file or directory it writes or works in.
_SHORT_TARGETS: dict[str, str] = {
    "sort": "o",
    "curl": "oDc",
    "wget": "OoaP",
    "cp": "t",
    "mv": "t",
    "install": "t",
    "ln": "t",
    "make": "Co",
    "gcc": "o",
    "cc": "o",
    "clang": "o",
    "g++": "o",
    "c++": "o",
    "git": "Co",
    "unzip": "d",
}
_ALL_OPERANDS = frozenset(
    {"mv", "ln", "rm", "rmdir", "touch", "mkdir", "truncate", "unlink", "shred", "tee"}
    | {"chmod", "chown", "chgrp"}
)
_LAST_OPERAND = frozenset({"cp", "install", "rsync", "scp"})
_WRITERS = frozenset({*_SHORT_TARGETS, *_ALL_OPERANDS, *_LAST_OPERAND, "sed", "tar", "dd", "find"})
"""Programs with write options or operands: an argument known only at run time
may be one."""
_FIND_WRITES = frozenset({"-fprint", "-fprint0", "-fprintf", "-fls"})
_GIT_GLOBAL_PLACES = frozenset({"--git-dir", "--work-tree"})


def operands(words: Sequence[Word]) -> list[Word]:
    """The words after the program name that do not look like options."""
    found: list[Word] = []
    ended = False
    for word in words[1:]:
        if ended or not word.value.startswith("-") or word.value == "-":
            found.append(word)
        elif word.value == "--":
            ended = True
    return found


def _target(word: Word, via: str) -> Write | None:
    if not word.literal:
        return Write(None, via)
    if word.value in NOT_FILES or word.value.startswith("/dev/fd/") or word.value == "-":
        return None
    return Write(word.value, via)


def program_writes(words: Sequence[Word]) -> list[Write]:
    """The files and directories ``words`` (a program and its arguments) writes."""
    name = os.path.basename(words[0].value)
    shorts = _SHORT_TARGETS.get(name, "")
    found: list[Write | None] = []
    rest = list(words[1:])
    for index, word in enumerate(rest):
        value = word.value
        after = rest[index + 1] if index + 1 < len(rest) else None
        option, equals, attached = value.partition("=")
        if option in _OUTPUT_LONG or (name == "git" and option in _GIT_GLOBAL_PLACES):
            if equals:
                found.append(_target(Word(attached, word.literal), f"{name} {option}"))
            elif after is not None:
                found.append(_target(after, f"{name} {option}"))
        elif name == "dd" and value.startswith("of="):
            found.append(_target(Word(value[3:], word.literal), "dd of="))
        elif name == "find" and value in _FIND_WRITES and after is not None:
            found.append(_target(after, f"find {value}"))
        elif value.startswith("-") and not value.startswith("--") and len(value) > 1:
            for position, char in enumerate(value[1:], start=2):
                if char in shorts:
                    attached_value = value[position:]
                    if attached_value:
                        found.append(_target(Word(attached_value, word.literal), f"{name} -{char}"))
                    elif after is not None:
                        found.append(_target(after, f"{name} -{char}"))
                    break
    found.extend(_operand_writes(name, words))
    if name in _WRITERS and not all(w.literal for w in rest):
        # "$ARGS" or $(...) could expand to --output=/elsewhere at run time.
        found.append(Write(None, f"{name} with an argument known only at run time"))
    return [w for w in found if w is not None]


def _operand_writes(name: str, words: Sequence[Word]) -> list[Write | None]:
    args = operands(words)
    if name in _ALL_OPERANDS:
        return [_target(w, name) for w in args]
    if name == "cp" and any(
        re.fullmatch(r"-[a-zA-Z]*[sl][a-zA-Z]*|--(symbolic-)?link", w.value) for w in words[1:]
    ):
        # cp -s / -l makes links: where they point is reachable through them.
        return [_target(w, "cp -s") for w in args]
    if name == "install" and any(w.value in ("-d", "--directory") for w in words[1:]):
        return [_target(w, "install -d") for w in args]
    if name in _LAST_OPERAND and len(args) > 1:
        return [_target(args[-1], name)]
    if name == "sed" and _sed_in_place(words):
        scripted = any(w.value.startswith(("-e", "--expression", "-f")) for w in words[1:])
        return [_target(w, "sed -i") for w in (args if scripted else args[1:])]
    if name == "tar":
        return _tar_writes(words)
    if name == "git" and args:
        # git worktree add PATH, git clone URL [DIR], git init [DIR], git bundle create FILE
        sub, rest = args[0].value, args[1:]
        if sub in ("worktree", "bundle") and rest and rest[0].value in ("add", "create"):
            return [_target(w, f"git {sub} {rest[0].value}") for w in rest[1:2]]
        if sub == "clone" and len(rest) > 1:
            return [_target(rest[-1], "git clone")]
        if sub == "init" and rest:
            return [_target(rest[-1], "git init")]
    if name == "find" and any(w.value == "-delete" for w in words):
        starts = [w for w in words[1:] if not w.value.startswith(("-", "(", "!", ")"))]
        return [_target(w, "find -delete") for w in starts[:1] or [Word(".", True)]]
    return []


def _sed_in_place(words: Sequence[Word]) -> bool:
    """``-i``, ``-i.bak``, ``-ni``, ``--in-place[=SUFFIX]``."""
    return any(re.fullmatch(r"-[nErsuz]*i.*|--in-place(=.*)?", w.value) for w in words[1:])


def _tar_writes(words: Sequence[Word]) -> list[Write | None]:
    """``tar -C DIR`` and ``tar -f FILE``: the archive and where it unpacks."""
    found: list[Write | None] = []
    rest = list(words[1:])
    for index, word in enumerate(rest):
        value = word.value
        option, equals, attached = value.partition("=")
        if option in ("--file", "--directory"):
            after = rest[index + 1] if index + 1 < len(rest) else None
            place = Word(attached, word.literal) if equals else after
            if place is not None:
                found.append(_target(place, f"tar {option}"))
            continue
        cluster = value[1:] if value.startswith("-") and not value.startswith("--") else ""
        if index == 0 and not value.startswith("-"):
            cluster = value  # old style: "tar czf out.tgz dir"
        taken = 0
        for char in cluster:
            if char in "fC":
                taken += 1
                if index + taken < len(rest):
                    found.append(_target(rest[index + taken], f"tar -{char}"))
    return found


_SED_ADDRESS = r"(?:\d+|\$|/(?:[^/\\\n]|\\.)*/I?)(?:~\d+)?"
_SED_PART = r"(?:(?!(?P=d))[^\\\n]|\\.)*"
_SED_COMMAND = re.compile(
    rf"\s*(?:{_SED_ADDRESS}(?:\s*,\s*(?:{_SED_ADDRESS}|[+~]\d+))?)?\s*!?\s*"
    rf"(?:[pdqQnNDPhHgGxlz=]|s(?P<d>[^\\\n\sa-zA-Z0-9]){_SED_PART}(?P=d){_SED_PART}(?P=d)"
    r"[gpiIm0-9]*)?\s*"
)
_AWK_RISKY = re.compile(r"system|getline|[|>]|close|fflush|@")


def _sed_safe(script: str) -> bool:
    """Whether a sed script only prints, deletes, quits and substitutes (no ``w``
    file, no ``e`` command, no ``r`` file)."""
    return all(_SED_COMMAND.fullmatch(part) for part in re.split(r"[;\n]", script))


# Long options that name a program for the program to run, whatever the program.
_RUNS_PROGRAM = frozenset(
    {"--to-command", "--use-compress-program", "--compress-program", "--checkpoint-action"}
    | {"--info-script", "--new-volume-script", "--rsh", "--rsh-command", "--rmt-command"}
    | {"--pre", "--exec", "--extcmd", "--pager", "--editor", "--upload-pack"}
    | {"--receive-pack", "--open-files-in-pager", "--config", "--execute"}
)
# Short options that do the same, per program (tar -I prog, curl -K file, ...).
_RUNS_PROGRAM_SHORT = {"tar": "IF", "curl": "K", "wget": "e", "rsync": "e", "scp": "S"}
# git sub-commands and their options that run a command given on the line.
_GIT_RUNS = {"grep": "O", "rebase": "x", "difftool": "x", "bisect": "", "submodule": ""}


def program_problem(words: Sequence[Word]) -> str | None:
    """Why an argument of this program is code the check cannot read, if it is."""
    name = os.path.basename(words[0].value)
    for word in words[1:]:
        option = word.value.partition("=")[0]
        short = _RUNS_PROGRAM_SHORT.get(name, "")
        clustered = option.startswith("-") and not option.startswith("--")
        if option in _RUNS_PROGRAM or (clustered and any(c in short for c in option[1:])):
            return f"{name} {option}, which names a program or options for it to run"
    if name == "sed":
        return _sed_problem(words)
    if name in ("awk", "gawk", "mawk", "nawk"):
        programs = [w for w in words[1:] if not w.value.startswith("-")][:1]
        if any(w.value.startswith("-f") or w.value == "--file" for w in words[1:]):
            return "an awk program read from a file"
        if any(not w.literal or _AWK_RISKY.search(w.value) for w in programs):
            return "an awk program that may run commands or write files"
    if name == "git":
        return _git_problem(words)
    return None


def _git_problem(words: Sequence[Word]) -> str | None:
    for index, word in enumerate(words[1:], start=1):
        value = word.value
        if not value.startswith("-"):
            flags = _GIT_RUNS.get(value)
            if flags is None:
                return None
            rest = [w.value for w in words[index + 1 :]]
            if value in ("bisect", "submodule") and {"run", "foreach"} & set(rest):
                return f"git {value} run/foreach, which runs a command"
            if flags and any(v[:1] == "-" and v[1:2] != "-" and flags in v for v in rest):
                return f"git {value} -{flags}, which runs a command"
            return None
        if value in ("-c", "--config-env", "--exec-path") or value.startswith(
            ("-c", "--config-env=", "--exec-path=")
        ):
            return "git -c, which can set a program for git to run"
    return None


def _sed_problem(words: Sequence[Word]) -> str | None:
    scripts: list[Word] = []
    take = False
    for word in words[1:]:
        value = word.value
        if take:
            scripts.append(word)
            take = False
        elif value in ("-e", "--expression"):
            take = True
        elif value.startswith("--expression="):
            scripts.append(Word(value.partition("=")[2], word.literal))
        elif value.startswith("-f") or value.startswith("--file"):
            return "a sed script read from a file"
        elif value.startswith("-e") and not value.startswith("--"):
            scripts.append(Word(value[2:], word.literal))
    if not scripts:
        args = operands(words)
        scripts = args[:1]
    for script in scripts:
        if not script.literal or not _sed_safe(script.value):
            return "a sed script beyond print, delete and substitute (it may write or run)"
    return None
