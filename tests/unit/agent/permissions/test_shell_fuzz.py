"""Properties: a command line that contains syntax through which bash may run
text as code, however it is joined to allowed commands, is never approved by a
rule and never counted read-only; and what the check lets run, real bash runs
without the denied program."""

from __future__ import annotations

import subprocess
import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from clover_code.agent.permissions.policy import PermissionPolicy
from clover_code.agent.permissions.shell.parse import parse_shell
from clover_code.agent.permissions.shell.verdict import read_only
from clover_code.config.settings import PermissionRules

ALLOWED = ["git status", "ls -la", "echo hi", "cat app.py", "grep x app.py", "pytest -q"]
RULES = PermissionRules(
    allow={"shell": ["git status", "ls *", "echo *", "cat *", "grep *", "pytest *", "sort *"]}
)
DENY = PermissionRules(deny={"shell": ["rm *"]})

# Each runs text bash evaluates as code, or changes how later text is run.
EVALUATING = [
    "x='a[$(rm v)]'",
    "(( x ))",
    "[[ $x -eq 1 ]]",
    "test $x -ge 0",
    "[[ -v a[$i] ]]",
    "echo ${x@P}",
    "echo ${!x}",
    "echo ${a[$i]}",
    "echo $(( x ))",
    "echo $[x]",
    "a[$i]=1",
    "a=(1 2)",
    "declare -n y=x",
    "local -i n",
    "export X=1",
    "readonly X=1",
    "printf -v x hi",
    "read 'a[$(ls)]'",
    "let x=1",
    "PS4='$(ls)'",
    "PROMPT_COMMAND=ls",
    "BASH_ENV=./x ls",
    "set -o functrace",
    "shopt -s extdebug",
    "mapfile -C ls arr",
    "complete -C ls ls",
    "bind -x ls",
    "trap ls EXIT",
    "eval ls",
    "source ./x",
    ". ./x",
    "exec ls",
    "alias ls=ls",
    "enable -n echo",
    "builtin echo",
    "command ls",
    "f() { ls; }",
    "function g { ls; }",
    "! function g { ls; }",
    "coproc ls",
    "cat <(ls)",
    "ls > >(cat)",
    "bash <<< ls",
    "ls | sh",
    "xargs -I{} sh -c {}",
    "hash -p ./x ls",
    "for ((i=0;i<2;i++)); do ls; done",
    'echo $"x"',
]
# Writes outside the workspace: never approved by a rule (full-auto still runs them).
WRITING = [
    "git status > /tmp/x",
    "ls >> ../x",
    "echo hi > ~/x",
    'ls > "$OUT"',
    "sort -o /tmp/z app.py",
    "cat app.py | sort --output=/tmp/z",
    "cd /tmp && ls > x",
    "echo x | tee /tmp/w",
]
JOINS = [" ; ", " && ", " || ", " | ", "\n", " & "]
WRAPS = [
    "@@",
    "echo $( @@ )",
    "echo `@@`",
    'echo "$( @@ )"',
    "( @@ )",
    "{ @@; }",
    "if true; then @@; fi",
    "for i in 1; do @@; done",
    "while false; do @@; done",
    'bash -c "@@"',
    "! @@",
]


def _line(draw: st.DrawFn, fragments: list[str]) -> str:
    parts = [draw(st.sampled_from(ALLOWED))] if draw(st.booleans()) else []
    for _ in range(draw(st.integers(1, 3))):
        fragment = draw(st.sampled_from(fragments))
        parts.append(draw(st.sampled_from(WRAPS)).replace("@@", fragment))
    if draw(st.booleans()):
        parts.append(draw(st.sampled_from(ALLOWED)))
    line = parts[0]
    for part in parts[1:]:
        line += draw(st.sampled_from(JOINS)) + part
    return line


@st.composite
def evaluating_lines(draw: st.DrawFn) -> str:
    return _line(draw, EVALUATING)


@st.composite
def writing_lines(draw: st.DrawFn) -> str:
    return _line(draw, EVALUATING + WRITING)


@settings(max_examples=300, deadline=None)
@given(evaluating_lines())
def test_evaluating_syntax_is_never_approved(line: str) -> None:
    root = Path("/nonexistent-workspace")
    allowing = PermissionPolicy(RULES, root)
    ruling = allowing.decide("auto-edit", "shell", "execute", {"command": line})
    assert ruling.verdict != "allow", ruling.reason
    denying = PermissionPolicy(DENY, root)
    ruling = denying.decide("full-auto", "shell", "execute", {"command": line})
    assert ruling.verdict != "allow", ruling.reason
    assert not read_only(parse_shell(line))


@settings(max_examples=300, deadline=None)
@given(writing_lines())
def test_writes_outside_are_never_approved_by_rules(line: str) -> None:
    policy = PermissionPolicy(RULES, Path("/nonexistent-workspace"))
    ruling = policy.decide("auto-edit", "shell", "execute", {"command": line})
    assert ruling.verdict != "allow", ruling.reason
    assert not read_only(parse_shell(line))


def test_each_fragment_reaches_the_check_it_is_meant_for() -> None:
    """Not a parse error: the property tests the fail-closed rules, not the parser."""
    for fragment in EVALUATING:
        parsed = parse_shell(f"git status && {fragment}")
        assert parsed.problem is None and parsed.opaque is not None, fragment
    for fragment in WRITING:
        parsed = parse_shell(f"git status && {fragment}")
        assert parsed.problem is None and parsed.opaque is None and parsed.writes, fragment


# Differential: the parser against real bash. A payload nested in random syntax;
# whenever the check would let the line run (full-auto with "touch *" denied),
# bash must not touch the file.
PAYLOAD = "touch pwned"
NESTINGS = [
    "$( @@ )",
    "`@@`",
    'echo "$( @@ )"',
    "cat <( @@ )",
    "echo > >( @@ )",
    "{ @@; }",
    "( @@ )",
    "! @@",
    "if true; then @@; fi",
    "case a in (a) @@;; esac",
    "f() { @@; }; f",
    "! function f { @@; }; f",
    "function f() ( @@ ); f",
    "eval '@@'",
    "bash -c '@@'",
    'sh -c "@@"',
    "coproc { @@; }",
    "time @@",
    "until @@; do :; done; :",
    "cat <<E\n$( @@ )\nE",
    "cat <<<$( @@ )",
    "echo ${x:-$( @@ )}",
    "x=$( @@ ) true",
    "true | @@",
    "false || @@",
    "echo a#$( @@ )",
    "echo a\\\n$( @@ )",
    "[[ $( @@ ) ]]",
    "echo {a,$( @@ )}",
    "exec @@",
    "builtin eval '@@'",
    "timeout 5 @@",
    "xargs -a /dev/null @@",
    "find . -maxdepth 0 -exec @@ \\;",
    "x='a[$( @@ )]'; (( x ))",
    "x='a[$( @@ )]'; [[ $x -eq 1 ]]",
    "x='$( @@ )'; echo ${x@P}",
    "trap '@@' EXIT",
    "echo $(( $( @@ ) ))",
    "declare y=$( @@ )",
    "read y <<< $( @@ )",
    ": '@@'",
    "cat <<'E'\n$( @@ )\nE",
    "echo $'\\'' ; @@",
    "echo \\'; @@",
]


@st.composite
def nested_payloads(draw: st.DrawFn) -> str:
    line = PAYLOAD
    for _ in range(draw(st.integers(1, 3))):
        line = draw(st.sampled_from(NESTINGS)).replace("@@", line)
    return line


@settings(max_examples=200, deadline=None)
@given(nested_payloads())
def test_what_the_check_lets_run_does_not_run_the_denied_program(line: str) -> None:
    with tempfile.TemporaryDirectory() as work:
        policy = PermissionPolicy(PermissionRules(deny={"shell": ["touch *"]}), Path(work))
        if policy.decide("full-auto", "shell", "execute", {"command": line}).verdict != "allow":
            return
        subprocess.run(
            ["bash", "-c", line],
            cwd=work,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=20,
            check=False,
        )
        assert not (Path(work) / "pwned").exists(), line
