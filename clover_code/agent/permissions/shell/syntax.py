"""Which bash syntax the command check fully understands: an allow-list.

bash evaluates text as code in more places than a parser shows: a variable's
value used in arithmetic (``x='a[$(rm f)]'; (( x ))`` runs ``rm f``), in
``[[ $x -eq 1 ]]``, in a prompt expansion (``${x@P}``), through an indirect
name (``${!x}``), through builtins that take names or strings (``eval``,
``printf -v``, ``read``, ``declare``, ``trap``...). A rule can only vouch for
what the check can see, so the check works from an allow-list: every node
type it knows is listed here, with the conditions under which it is plain
data; anything else makes the command *not fully understood* (``node_problem``
and ``builtin_problem`` give the reason, naming the construct). Such a
command is never approved by an allow rule nor counted as read-only.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence

from tree_sitter import Node

from clover_code.agent.permissions.shell.wrappers import RISKY_VARS, SHELLS, Word

__all__ = ["arithmetic_tripwire", "builtin_problem", "node_problem"]

# Node types that are plain structure or plain data wherever they appear.
_PLAIN = frozenset(
    {
        "program",
        "comment",
        "list",
        "pipeline",
        "command",
        "command_name",
        "word",
        "number",
        "raw_string",
        "string",
        "string_content",
        "ansi_c_string",
        "concatenation",
        "simple_expansion",
        "special_variable_name",
        "variable_name",
        "command_substitution",
        "subshell",
        "redirected_statement",
        "file_redirect",
        "file_descriptor",
        "heredoc_redirect",
        "heredoc_start",
        "heredoc_body",
        "heredoc_content",
        "heredoc_end",
        "herestring_redirect",
        "negated_command",
        "if_statement",
        "elif_clause",
        "else_clause",
        "while_statement",
        "do_group",
        "case_statement",
        "case_item",
        "variable_assignments",
        "test_operator",
        "regex",
        "extglob_pattern",
        "brace_expression",
        "test_command",
        "parenthesized_expression",
    }
)
# Node types that always make a command not fully understood, and why.
_NEVER = {
    "arithmetic_expansion": "arithmetic expansion $(( )) on variables",
    "c_style_for_statement": "a C-style for (( )) loop (arithmetic on variables)",
    "function_definition": "a function definition",
    "process_substitution": "process substitution <( ) or >( )",
    "subscript": "an array subscript (bash evaluates it as arithmetic)",
    "array": "an array assignment",
    "declaration_command": "declare/typeset/local/export/readonly",
    "translated_string": 'a $"..." translated string',
    "ternary_expression": "an arithmetic expression",
    "postfix_expression": "an arithmetic expression",
}
_ARITH_TESTS = frozenset({"-eq", "-ne", "-lt", "-le", "-gt", "-ge"})
_NAME_TESTS = frozenset({"-v", "-R"})
_INTEGER = re.compile(r"[+-]?[0-9]+")
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# ${NAME}, ${#NAME}, ${1}, ${@}; and ${NAME:-word}-style defaults and ${NAME#pattern}
# trims whose word holds nothing bash would expand further (no ${NAME:=word}:
# it assigns).
_PLAIN_EXPANSION = re.compile(
    r"\$\{(#?([A-Za-z_][A-Za-z0-9_]*|[0-9]+)|[@*#?$!0-9-])"
    r"((:?[-+?]|##?|%%?)[^$`\\\[\]{}()!<>]*)?\}"
)
# Text in a variable's value that bash could run if the value reached an
# arithmetic or prompt context.
_CODE_IN_VALUE = re.compile(r"[\[\]`]|\$[({\[]")
_ARITH_LITERAL = re.compile(r"[\s0-9+\-*/%()<>=!&|^~?:,]*")
_ARITH_OPENER = re.compile(r"\$\(\(|\(\(|\$\[")
MAX_ARITHMETIC = 64
"""More arithmetic openers than this in one script is more than the check reads."""
MAX_ARITHMETIC_LENGTH = 1000
"""Longer arithmetic or parameter expansions are not read (and not understood)."""


def node_problem(node: Node) -> str | None:
    """Why ``node`` is not fully understood, or None when it is plain."""
    kind = node.type
    if not node.is_named:
        # A bare "$" token outside an expansion is how the grammar shows $"...".
        # (Only then is the parent looked up: that walks down from the root.)
        parent = node.parent if kind == "$" else None
        if parent is not None and parent.type not in ("simple_expansion", "expansion"):
            return _NEVER["translated_string"]
        return None
    if kind in _NEVER:
        if kind == "arithmetic_expansion" and _arith_literal(node):
            return None
        return _NEVER[kind]
    if kind == "compound_statement":
        first = node.children[0].type if node.children else ""
        if first == "((" and not _arith_literal(node):
            return "an arithmetic (( )) command on variables"
        return None
    if kind == "expansion":
        too_long = node.end_byte - node.start_byte > MAX_ARITHMETIC_LENGTH
        if too_long or not _PLAIN_EXPANSION.fullmatch(_text(node)):
            return f"the parameter expansion {_short(node)}"
        return None
    if kind == "for_statement":
        if node.children and node.children[0].type == "select":
            return "a select loop"
        return None
    if kind == "variable_assignment":
        return _assignment_problem(node)
    if kind == "unset_command":
        names = [_text(c) for c in node.named_children]
        if not all(_IDENTIFIER.fullmatch(n) or n in ("-v", "-f", "-n") for n in names):
            return "unset of a name that is not a plain variable"
        return None
    if kind in ("binary_expression", "unary_expression"):
        return _test_problem(node)
    if kind in _PLAIN:
        return None
    return f"shell syntax this check does not know ({kind})"


def _text(node: Node) -> str:
    return (node.text or b"").decode("utf-8", "replace")


def _short(node: Node) -> str:
    text = _text(node)
    return text if len(text) <= 40 else text[:37] + "..."


def _arith_literal(node: Node) -> bool:
    """Arithmetic on numbers only: no variable whose value bash would evaluate."""
    if node.end_byte - node.start_byte > MAX_ARITHMETIC_LENGTH:
        return False
    inner = _text(node).removeprefix("$((").removeprefix("((").removeprefix("$[")
    return _ARITH_LITERAL.fullmatch(inner.removesuffix("))").removesuffix("]")) is not None


def _assignment_problem(node: Node) -> str | None:
    name_node = node.children[0] if node.children else None
    if name_node is None or name_node.type != "variable_name":
        return "an assignment to an array element (its subscript is arithmetic)"
    name = _text(name_node)
    if RISKY_VARS.match(name):
        return f"an assignment to {name}, which changes how bash or programs run"
    for value in node.named_children[1:]:
        for piece in _literal_pieces(value):
            if _CODE_IN_VALUE.search(_text(piece)):
                return f"a value for {name} that bash could later run as code"
    return None


def _literal_pieces(node: Node) -> list[Node]:
    """The literal text nodes of an assignment's value (expansions are judged alone)."""
    if node.type in ("word", "raw_string", "string_content", "ansi_c_string", "number"):
        return [node]
    if node.type in ("string", "concatenation"):
        return [piece for child in node.named_children for piece in _literal_pieces(child)]
    return []


def _test_problem(node: Node) -> str | None:
    """``[[ a -eq b ]]`` evaluates a and b as arithmetic; ``-v name`` evaluates a
    subscript. Both are plain only on literal numbers and plain names."""
    operator = next((c for c in node.children if c.type == "test_operator"), None)
    if operator is None:
        return None
    op = _text(operator)
    operands = [c for c in node.named_children if c.type != "test_operator"]
    if op in _ARITH_TESTS and not all(_INTEGER.fullmatch(_text(c)) for c in operands):
        return f"a test {op} comparison (bash evaluates its operands as arithmetic)"
    if op in _NAME_TESTS and not all(_IDENTIFIER.fullmatch(_text(c)) for c in operands):
        return f"a test {op} on a name that is not a plain variable"
    return None


def arithmetic_tripwire(source: str, quoted: Sequence[tuple[int, int]]) -> str | None:
    """A backstop under the parser, which reads ``$((y))`` in a here-document as
    a command: arithmetic openers anywhere outside single quotes, comments or
    quoted here-documents make the command not fully understood."""
    data = bytearray(source.encode("utf-8"))
    for start, end in quoted:
        data[start:end] = b" " * (end - start)
    text = data.decode("utf-8", "replace")
    for count, match in enumerate(_ARITH_OPENER.finditer(text)):
        if count >= MAX_ARITHMETIC:
            return "more arithmetic than this check reads"
        closing = "]" if match.group() == "$[" else "))"
        end = text.find(closing, match.end(), match.end() + MAX_ARITHMETIC_LENGTH)
        if end < 0 or _ARITH_LITERAL.fullmatch(text, match.end(), end) is None:
            return "arithmetic on variables"
    return None


# Builtins that evaluate strings or names as code, change how later commands
# are found or run, or take over the shell.
_EVALUATING = {
    "eval": "eval",
    "source": "source",
    ".": "'.' (source)",
    "trap": "trap",
    "exec": "exec",
    "alias": "alias",
    "enable": "enable",
    "builtin": "builtin",
    "let": "let (arithmetic)",
    "declare": "declare",
    "typeset": "typeset",
    "local": "local",
    "export": "export",
    "readonly": "readonly",
    "mapfile": "mapfile",
    "readarray": "readarray",
    "complete": "complete",
    "compgen": "compgen",
    "compopt": "compopt",
    "bind": "bind",
    "shopt": "shopt",
    "hash": "hash",
    "fc": "fc",
    "getopts": "getopts",
    "coproc": "coproc",
    "jobs": "jobs",
    "pushd": "pushd",
    "popd": "popd",
}
_RESERVED = frozenset(
    {"function", "{", "}", "if", "then", "else", "elif", "fi", "for", "while", "until"}
    | {"do", "done", "case", "esac", "select", "in", "[[", "]]", "!"}
)
_SAFE_SET = re.compile(r"[-+][euxvfC]+")
_SAFE_SET_OPTIONS = frozenset({"pipefail", "errexit", "nounset", "xtrace", "noclobber", "noglob"})
_SAFE_READ = frozenset({"-r", "-s", "-e", "-rs", "-sr", "-re", "-er"})
_NUMERIC_ARGS = frozenset({"exit", "return", "shift", "break", "continue"})


def builtin_problem(words: Sequence[Word], *, open_args: bool = False) -> str | None:
    """Why running ``words`` (one layer of a command) is not fully understood."""
    name = os.path.basename(words[0].value) if words[0].literal else ""
    args = words[1:]
    values = [w.value for w in args]
    if name in _EVALUATING:
        return _EVALUATING[name]
    if name in _RESERVED:
        # A keyword read as a program name means the parser misread the line
        # (it takes "! function g { ...; }" for commands named function and }).
        return f"the reserved word '{name}' where a program name should be"
    if name == "command" and not (values and values[0] in ("-v", "-V")):
        return "command (it bypasses functions and runs builtins)"
    if name == "printf" and any(v.startswith("-v") for v in values[:2]):
        return "printf -v"
    if name == "wait" and any(v.startswith("-") and "p" in v for v in values):
        return "wait -p"
    if name == "read" and not all(
        w.literal and (w.value in _SAFE_READ or _IDENTIFIER.fullmatch(w.value)) for w in args
    ):
        return "read with options or names this check does not know"
    if name == "set" and not _safe_set(values):
        return "set with options this check does not know"
    if name in _NUMERIC_ARGS and not all(_INTEGER.fullmatch(v) for v in values):
        return f"{name} with an argument that is not a number"
    if name in ("test", "[") and _test_args_problem(args):
        return f"{name} with an arithmetic or -v comparison on values it cannot see"
    if name in SHELLS and open_args:
        return f"{name} started by xargs or find with arguments only known at run time"
    if name == "xargs" and any(v.startswith(("-I", "-i", "--replace")) for v in values):
        return "xargs -I, which puts its input into the command it runs"
    return None


def _safe_set(values: Sequence[str]) -> bool:
    for index, value in enumerate(values):
        if value == "--":
            return True
        if value in ("-o", "+o"):
            continue
        if index > 0 and values[index - 1] in ("-o", "+o"):
            if value not in _SAFE_SET_OPTIONS:
                return False
        elif not _SAFE_SET.fullmatch(value):
            return False
    return not values or values[-1] not in ("-o", "+o")


def _test_args_problem(args: Sequence[Word]) -> bool:
    values = [w.value for w in args]
    for index, value in enumerate(values):
        if value in _ARITH_TESTS:
            around = [args[i] for i in (index - 1, index + 1) if 0 <= i < len(args)]
            if not all(w.literal and _INTEGER.fullmatch(w.value) for w in around):
                return True
        if value in _NAME_TESTS and index + 1 < len(args):
            nxt = args[index + 1]
            if not (nxt.literal and _IDENTIFIER.fullmatch(nxt.value)):
                return True
    return False
