"""A bash command line broken into the programs it runs and the files it writes.

``parse_shell`` reads a command line with tree-sitter-bash and finds every
simple command in it: in pipelines, ``&&`` / ``||`` / ``;`` chains, subshells,
groups, loops, functions, command and process substitution, and inside
wrappers that run another program (``env``, ``timeout``, ``nice``, ``xargs``,
``sudo``, ``bash -c``, ``eval``, ``find -exec``...), whose argument lists are
read as far as needed to find the program they start.

Each command is a chain of ``Layer`` s, outermost first: ``sudo -u x rm f``
is ``(sudo -u x rm f)`` then ``(rm f)``. A layer is *transparent* when it
starts the next one without adding power (``timeout``, ``env`` without
risky variables, ``bash -c``), so a rule that allows the inner program may
allow the whole; ``sudo`` is not transparent.

Quoting is undone the way bash would (``'r''m'`` and ``r\\m`` are ``rm``); a
word bash would expand at run time (``$X``, ``$(...)``, globs, braces) is kept
as written and marked as not literal. Anything the parse cannot vouch for
sets ``problem``, and callers then ask the user (fail closed): syntax errors,
control characters such as a carriage return (``ls\\rrm`` shows as ``rm``),
an unknown wrapper option, or a line past the complexity caps.

Every node is also held against the allow-list in ``shell_syntax``: syntax
through which bash could run text the walk does not see (arithmetic on
variables, ``eval``, ``${x@P}``, function definitions, unknown node types...)
sets ``opaque``. The programs and writes are still listed, so deny rules keep
working, but such a line is never approved by a rule nor counted read-only.
``chdirs`` lists where ``cd`` may move (None: only known at run time), for
judging relative write targets.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from functools import cache

import tree_sitter_bash
from tree_sitter import Language, Node, Parser

from clover_code.agent.permissions.shell.programs import NOT_FILES, Write, operands, program_problem
from clover_code.agent.permissions.shell.programs import program_writes as _program_writes
from clover_code.agent.permissions.shell.syntax import (
    arithmetic_tripwire,
    builtin_problem,
    node_problem,
)
from clover_code.agent.permissions.shell.wrappers import (
    ASSIGNMENT,
    FIND_EXEC,
    RISKY_VARS,
    SHELLS,
    WRAPPERS,
    Word,
    git_subcommand,
    shell_script,
    skip_options,
)

__all__ = ["MAX_COMMANDS", "Layer", "ParsedShell", "SimpleCommand", "Write", "parse_shell"]

MAX_COMMANDS = 50
"""More simple commands than this in one line is too complex to vouch for."""
MAX_LENGTH = 100_000
MAX_NODES = 50_000
MAX_SCRIPT_DEPTH = 4
"""How deep ``bash -c "bash -c '...'"`` may nest."""

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")
_WRITE_OPS = frozenset({">", ">>", ">|", "&>", "&>>", "<>"})


@dataclass(frozen=True, slots=True)
class Layer:
    """One program in a chain of wrappers, with all the words it is given.

    ``dynamic``: the program's name is only known at run time. ``open_args``:
    more arguments come at run time (``xargs``, ``find -exec ... {} +``).
    """

    argv: tuple[str, ...]
    dynamic: bool = False
    transparent: bool = False
    open_args: bool = False


@dataclass(frozen=True, slots=True)
class SimpleCommand:
    """One program the line runs, as the chain of layers that start it."""

    layers: tuple[Layer, ...]

    @property
    def program(self) -> Layer:
        """The innermost layer: the program that finally runs."""
        return self.layers[-1]


@dataclass(frozen=True, slots=True)
class ParsedShell:
    """What a command line runs and writes, why it cannot be vouched for
    (``problem``), and what in it the check does not fully understand (``opaque``)."""

    commands: tuple[SimpleCommand, ...]
    writes: tuple[Write, ...]
    problem: str | None = None
    opaque: str | None = None
    chdirs: tuple[str | None, ...] = ()


@cache
def _language() -> Language:
    return Language(tree_sitter_bash.language())


def parse_shell(command: str, *, script_files: bool = False) -> ParsedShell:
    """Every simple command ``command`` runs and every file it redirects into.

    ``script_files``: a shell running a named script file (``sh x.sh``) is not
    opaque, for a caller that checks that file's content itself."""
    if len(command) > MAX_LENGTH:
        return ParsedShell((), (), f"the command is longer than {MAX_LENGTH} characters")
    found = _CONTROL.search(command)
    if found:
        char = found.group()
        return ParsedShell((), (), f"the command contains the control character {char!r}")
    extractor = _Extractor(script_files=script_files)
    extractor.script(command, (), 0)
    problem = extractor.problem
    if problem is None and len(extractor.commands) > MAX_COMMANDS:
        problem = f"the command runs more than {MAX_COMMANDS} programs"
    return ParsedShell(
        tuple(extractor.commands),
        tuple(extractor.writes),
        problem,
        extractor.opaque,
        tuple(extractor.chdirs),
    )


def _text(node: Node) -> str:
    return (node.text or b"").decode("utf-8", "replace")


def _unescape(raw: str) -> str:
    out: list[str] = []
    i = 0
    while i < len(raw):
        char = raw[i]
        if char == "\\" and i + 1 < len(raw):
            if raw[i + 1] != "\n":
                out.append(raw[i + 1])
            i += 2
            continue
        out.append(char)
        i += 1
    return "".join(out)


def _expands(raw: str) -> bool:
    """Whether an unquoted word holds glob, brace or tilde syntax bash expands."""
    if raw.startswith("~"):
        return True
    i = 0
    while i < len(raw):
        if raw[i] == "\\":
            i += 2
            continue
        if raw[i] in "*?[":
            return True
        if raw[i] == "{" and ("," in raw[i:] or ".." in raw[i:]):
            return True
        i += 1
    return False


def _word(node: Node) -> Word:
    raw = _text(node)
    kind = node.type
    if kind == "word":
        return Word(_unescape(raw), not _expands(raw))
    if kind == "number":
        return Word(raw, True)
    if kind == "raw_string":
        return Word(raw[1:-1], True)
    if kind == "string":
        parts = [c for c in node.children if c.type != '"']
        if all(c.type == "string_content" for c in parts):
            return Word(_unescape("".join(_text(c) for c in parts)), True)
        return Word(raw, False)
    if kind == "concatenation":
        pieces = [_word(child) for child in node.children]
        # Brace expansion spans the pieces ("r{m,}"); quoted braces are taken as it too.
        literal = all(p.literal for p in pieces) and not _expands(raw)
        return Word("".join(p.value for p in pieces), literal)
    return Word(raw, False)


@dataclass
class _Extractor:
    commands: list[SimpleCommand] = field(default_factory=list)
    writes: list[Write] = field(default_factory=list)
    problem: str | None = None
    opaque: str | None = None
    chdirs: list[str | None] = field(default_factory=list)
    nodes: int = 0
    script_files: bool = False
    """A shell given a script file counts as understood (the caller checks the file)."""

    def fail(self, reason: str) -> None:
        if self.problem is None:
            self.problem = reason

    def unclear(self, reason: str | None) -> None:
        """Note the first construct the check does not fully understand."""
        if reason is not None and self.opaque is None:
            self.opaque = reason

    def script(self, source: str, outer: tuple[Layer, ...], depth: int) -> None:
        """Walk one script: the command line itself, or a ``bash -c`` string."""
        if depth > MAX_SCRIPT_DEPTH:
            self.fail(f"shells inside shells nest more than {MAX_SCRIPT_DEPTH} deep")
            return
        tree = Parser(_language()).parse(source.encode("utf-8"))
        if tree.root_node.has_error:
            self.fail("bash cannot parse part of the command")
        # An explicit stack: a long chain nests one level per operator.
        stack: list[Node] = [tree.root_node]
        quoted: list[tuple[int, int]] = []
        while stack:
            node = stack.pop()
            self.nodes += 1
            if self.nodes > MAX_NODES:
                self.fail("the command is too complex to check")
                return
            kind = node.type
            self.unclear(node_problem(node))
            if kind in ("raw_string", "ansi_c_string", "comment") or (
                kind == "heredoc_body" and not node.named_children
            ):
                quoted.append((node.start_byte, node.end_byte))
            if kind == "command":
                self.command(node, outer, depth)
            elif kind in ("declaration_command", "unset_command"):
                words = [_text(c) for c in node.children if c.type != "comment"]
                self.add(outer, [Word(w, True) for w in words], depth)
            elif kind == "variable_assignment" and node.parent is not None:
                if node.parent.type in ("program", "list", "compound_statement", "do_group"):
                    name = _text(node).partition("=")[0]
                    if RISKY_VARS.match(name.rstrip("+")):
                        self.add(outer, [Word(_text(node), True)], depth)
            elif kind == "file_redirect":
                self.redirect(node)
            stack.extend(reversed(node.children))
        self.unclear(arithmetic_tripwire(source, quoted))

    def command(self, node: Node, outer: tuple[Layer, ...], depth: int) -> None:
        assignments: list[str] = []
        words: list[Word] = []
        for index, child in enumerate(node.children):
            name = node.field_name_for_child(index)
            if child.type == "variable_assignment":
                assignments.append(_text(child))
            elif name == "name":
                words.append(_word(child.children[0] if child.children else child))
            elif name == "argument":
                words.append(_word(child))
        if not words:
            return
        if assignments:
            risky = any(RISKY_VARS.match(a.partition("=")[0].rstrip("+")) for a in assignments)
            prefix = Layer(
                (*assignments, *(w.value for w in words)),
                dynamic=not words[0].literal,
                transparent=not risky,
            )
            outer = (*outer, prefix)
        self.add(outer, words, depth)

    def add(self, outer: tuple[Layer, ...], words: list[Word], depth: int) -> None:
        """Record the command ``words`` start, unwrapping wrappers layer by layer."""
        layers = list(outer)
        open_args = False
        while True:
            head = words[0]
            name = os.path.basename(head.value)
            layer_argv = tuple(w.value for w in words)
            self.unclear(builtin_problem(words, open_args=open_args))
            self.unclear(program_problem(words))
            if not head.literal:
                layers.append(Layer(layer_argv, dynamic=True, open_args=open_args))
                break
            if name in SHELLS:
                script = shell_script(words)
                if script is not None:
                    layers.append(Layer(layer_argv, transparent=True, open_args=open_args))
                    self.script_word(script, tuple(layers), depth)
                    return
                script_file = next(iter(operands(words)), None)
                if not (self.script_files and script_file is not None and script_file.literal):
                    self.unclear(f"{name} reading a script from a file or standard input")
            if name == "eval" and len(words) > 1:
                layers.append(Layer(layer_argv, transparent=True, open_args=open_args))
                joined = Word(" ".join(w.value for w in words[1:]), all(w.literal for w in words))
                self.script_word(joined, tuple(layers), depth)
                return
            if name == "git" and (sub := git_subcommand(words)) is not None:
                # Global options such as -c can run programs: not transparent,
                # but deny rules still see the "git push" underneath.
                layers.append(Layer(layer_argv, open_args=open_args))
                self.writes.extend(_program_writes(words[:sub]))
                words = [words[0], *words[sub:]]
                continue
            spec = WRAPPERS.get(name)
            start: int | None = None
            if spec is not None:
                start, problem = skip_options(words, spec)
                if problem is not None:
                    self.fail(problem)
            if spec is None or start is None or start >= len(words):
                layers.append(Layer(layer_argv, open_args=open_args))
                break
            risky = [
                w.value.partition("=")[0]
                for w in words[1:start]
                if ASSIGNMENT.match(w.value) and RISKY_VARS.match(w.value.partition("=")[0])
            ]
            if risky:
                self.unclear(f"{name} setting {risky[0]}, which changes how programs run")
            transparent = spec.transparent and not risky
            layers.append(Layer(layer_argv, transparent=transparent, open_args=open_args))
            open_args = open_args or spec.open_args
            words = words[start:]
        self.commands.append(SimpleCommand(tuple(layers)))
        program = layers[-1].argv
        if not layers[-1].dynamic:
            self.writes.extend(_program_writes(words))
        if os.path.basename(program[0]) == "cd":
            self.chdir(words)
        if os.path.basename(program[0]) == "find":
            self.find_exec(words, tuple(layers), depth)

    def chdir(self, words: list[Word]) -> None:
        """Where ``cd`` may move: its operand, home without one, None when unknown."""
        args = operands(words)
        if not args:
            self.chdirs.append("~")
        elif not args[0].literal or args[0].value == "-":
            self.chdirs.append(None)
        else:
            self.chdirs.append(args[0].value)

    def script_word(self, script: Word, layers: tuple[Layer, ...], depth: int) -> None:
        if script.literal:
            self.script(script.value, layers, depth + 1)
        else:
            # The script is only known at run time.
            dynamic = Layer((script.value,), dynamic=True)
            self.commands.append(SimpleCommand((*layers, dynamic)))

    def find_exec(self, words: list[Word], layers: tuple[Layer, ...], depth: int) -> None:
        """``find ... -exec prog args ;`` runs ``prog`` once per file found."""
        i = 0
        while i < len(words):
            if words[i].value in FIND_EXEC and i + 1 < len(words):
                end = i + 1
                while end < len(words) and words[end].value not in (";", "+"):
                    end += 1
                inner = words[i + 1 : end]
                if inner and "{}" in inner[0].value:
                    self.unclear("find -exec whose program is a file name found at run time")
                shell = bool(inner) and os.path.basename(inner[0].value) in SHELLS
                script = shell_script(inner) if shell else None
                if script is not None and "{}" in script.value:
                    self.unclear("find -exec running a file name as a shell script")
                if inner:
                    wrapper = Layer(layers[-1].argv, transparent=True)
                    self.add((*layers[:-1], wrapper), inner, depth)
                i = end
            i += 1

    def redirect(self, node: Node) -> None:
        operator = next((c.type for c in node.children if not c.is_named), "")
        targets = node.children_by_field_name("destination")
        if not targets:
            return
        target = _word(targets[0])
        if operator in (">&", "<&"):
            if target.value == "-" or target.value.isdigit():
                return
        elif operator not in _WRITE_OPS:
            return
        if not target.literal:
            self.writes.append(Write(None))
        elif target.value not in NOT_FILES and not target.value.startswith("/dev/fd/"):
            self.writes.append(Write(target.value))
