"""The fail-closed shell check: syntax bash could run as code, and writes outside
the workspace, are never approved by a rule nor counted as read-only.

Each row is (rules, mode, command, expected). Rules: ``A`` allows a list of
commands (the issue's ``git status`` among them) and denies nothing; ``D``
denies ``rm *`` and allows nothing; ``N`` has no rules. Expected: ``allow``
(runs without asking; not read-only), ``read-only`` (runs without asking and
is classified read-only), ``ask`` (needs approval; headless refuses it) or
``deny``.

The verdict chosen for full-auto: a command that is not fully understood
needs approval when any deny rule exists (a denied program could hide in it);
with no deny rules at all, full-auto runs it as it runs everything else.
A write outside the workspace is never approved by a rule; full-auto, which
runs every command without asking, still runs it.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from clover_code.agent.permissions.policy import PermissionPolicy
from clover_code.agent.permissions.shell.parse import parse_shell
from clover_code.agent.permissions.shell.verdict import read_only
from clover_code.config.settings import PermissionRules

ALLOWING = PermissionRules(
    allow={
        "shell": [
            "git status",
            "git diff *",
            "ls *",
            "cat *",
            "echo *",
            "grep *",
            "sort *",
            "sed *",
            "awk *",
            "tee *",
            "cp *",
            "mv *",
            "ln *",
            "install *",
            "dd *",
            "curl *",
            "wget *",
            "tar *",
            "printf *",
            "test *",
            "read *",
            "make *",
            "gcc *",
            "pytest *",
            "cd *",
            "xargs *",
            "find *",
        ]
    }
)
DENYING = PermissionRules(deny={"shell": ["rm *"]})
POLICIES = {"A": ALLOWING, "D": DENYING, "N": PermissionRules()}
ISSUE_EXAMPLE = "x='a[$(rm victim.txt)]'; (( x )); git status"

TABLE: list[tuple[str, str, str, str]] = [
    # the issue's example, in both configurations, and its relatives
    ("A", "auto-edit", ISSUE_EXAMPLE, "ask"),
    ("D", "full-auto", ISSUE_EXAMPLE, "ask"),
    ("N", "full-auto", ISSUE_EXAMPLE, "allow"),
    ("A", "auto-edit", "git status", "read-only"),
    ("A", "auto-edit", "x=1; (( x )); git status", "ask"),
    ("A", "auto-edit", "(( 1 + 2 )) && git status", "read-only"),
    ("D", "full-auto", "ls; (( x ))", "ask"),
    ("A", "auto-edit", "bash -c \"x='a[\\$(rm v)]'; (( x ))\"", "ask"),
    ("D", "full-auto", "bash -c \"x='a[\\$(rm v)]'; (( x ))\"", "ask"),
    # tests that evaluate arithmetic or subscripts
    ("A", "auto-edit", "[[ $x -eq 1 ]] && git status", "ask"),
    ("A", "auto-edit", '[ "$x" -gt 0 ] && ls', "ask"),
    ("A", "auto-edit", "test $x -eq 1 && ls", "ask"),
    ("A", "auto-edit", "[[ -v a[$(rm x)] ]]", "ask"),
    ("D", "full-auto", "[[ -v a[$(rm x)] ]]", "deny"),
    ("A", "auto-edit", "[[ -f app.py ]] && git status", "read-only"),
    ("A", "auto-edit", "test -f app.py && ls", "read-only"),
    ("A", "auto-edit", "[[ 3 -lt 4 ]] && ls", "read-only"),
    # parameter expansions
    ("A", "auto-edit", "echo ${x@P}", "ask"),
    ("D", "full-auto", "echo ${x@P}", "ask"),
    ("A", "auto-edit", "echo ${x@E} ${x@A}", "ask"),
    ("A", "auto-edit", "echo ${!x}", "ask"),
    ("A", "auto-edit", "echo ${a[$i]}", "ask"),
    ("A", "auto-edit", "echo ${x:1:2}", "ask"),
    ("A", "auto-edit", "echo $(( x + 1 ))", "ask"),
    ("A", "auto-edit", "echo $[x]", "ask"),
    ("A", "auto-edit", 'echo $"hello"', "ask"),
    ("A", "auto-edit", "cat <<EOF\n$((y))\nEOF", "ask"),
    ("A", "auto-edit", "echo $((1 + 2))", "read-only"),
    ("A", "auto-edit", 'echo ${HOME} "$HOME" ${x:-default} ${#x}', "read-only"),
    ("A", "auto-edit", 'x=$(git status); echo "$x"', "read-only"),
    ("A", "auto-edit", "for f in *.py; do cat $f; done", "read-only"),
    # values that could become code, and assignments that change the shell
    ("A", "auto-edit", "msg='[WIP]'; echo $msg", "ask"),
    ("A", "auto-edit", "a[$i]=1; ls", "ask"),
    ("A", "auto-edit", "a=(1 2); ls", "ask"),
    ("A", "auto-edit", "PS4='$(rm x)'; ls", "ask"),
    ("A", "auto-edit", "PROMPT_COMMAND=ls ls", "ask"),
    ("A", "auto-edit", "BASH_ENV=./evil.sh bash -c ls", "ask"),
    ("D", "full-auto", "ENV=./e sh -c ls", "ask"),
    # builtins that evaluate names or strings
    ("A", "auto-edit", "let x=1 && ls", "ask"),
    ("A", "auto-edit", "declare -n y=x; echo $y", "ask"),
    ("A", "auto-edit", "export A=1 && ls", "ask"),
    ("A", "auto-edit", "local x=1", "ask"),
    ("A", "auto-edit", "typeset -i x=1", "ask"),
    ("A", "auto-edit", "readonly X=1", "ask"),
    ("A", "auto-edit", "printf -v x hi && ls", "ask"),
    ("A", "auto-edit", "printf '%s\\n' hi", "read-only"),
    ("A", "auto-edit", "read 'a[$(rm x)]' < app.py", "ask"),
    ("A", "auto-edit", "read -a arr < app.py", "ask"),
    ("A", "auto-edit", "read -r line < app.py", "allow"),
    ("A", "auto-edit", "set -o functrace; ls", "ask"),
    ("A", "auto-edit", "shopt -s extglob; ls", "ask"),
    ("A", "auto-edit", 'mapfile -C "rm x" -c 1 arr < app.py', "ask"),
    ("A", "auto-edit", "complete -C 'rm x' ls", "ask"),
    ("A", "auto-edit", "bind -x '\"\\C-x\": rm x'", "ask"),
    ("A", "auto-edit", "trap 'rm x' EXIT; ls", "ask"),
    ("A", "auto-edit", "getopts ab opt", "ask"),
    ("A", "auto-edit", "hash -p /tmp/evil ls; ls", "ask"),
    ("A", "auto-edit", "wait -p x", "ask"),
    ("A", "auto-edit", "eval ls", "ask"),
    ("D", "full-auto", "eval 'rm x'", "deny"),
    ("D", "full-auto", 'eval "$cmd"', "ask"),
    ("A", "auto-edit", "source ./env.sh && ls", "ask"),
    ("D", "full-auto", ". ./env.sh", "ask"),
    ("A", "auto-edit", "exec ls", "ask"),
    ("A", "auto-edit", "alias ls='rm -rf'; ls", "ask"),
    ("A", "auto-edit", "enable -f ./x.so foo", "ask"),
    ("A", "auto-edit", "builtin echo hi", "ask"),
    ("A", "auto-edit", "command ls", "ask"),
    ("D", "full-auto", "coproc ls", "ask"),
    # functions, loops, substitutions, shells fed from elsewhere
    ("A", "auto-edit", "f() { ls; }; f", "ask"),
    ("D", "full-auto", "f() { ls; }; f", "ask"),
    ("D", "full-auto", "function g { rm -rf x; }", "deny"),
    ("D", "full-auto", "! function g { ls; }", "ask"),
    ("A", "auto-edit", "for ((i=0;i<3;i++)); do ls; done", "ask"),
    ("A", "auto-edit", "select x in a b; do ls; done", "ask"),
    ("A", "auto-edit", "cat <(ls)", "ask"),
    ("A", "auto-edit", "ls > >(cat)", "ask"),
    ("D", "full-auto", "bash <<< 'rm x'", "ask"),
    ("D", "full-auto", "cat x.sh | sh", "ask"),
    ("D", "full-auto", "xargs -I{} sh -c {}", "ask"),
    ("D", "full-auto", "find . -name '*.sh' -exec sh {} \\;", "ask"),
    ("A", "auto-edit", "find . -exec sh -c {} \\;", "ask"),
    ("D", "full-auto", "env 'BASH_FUNC_ls%%=() { rm x; }' bash -c ls", "ask"),
    ("A", "auto-edit", "env 'BASH_FUNC_ls%%=() { rm x; }' bash -c ls", "ask"),
    ("A", "auto-edit", "bash -c 'git status'", "read-only"),
    ("A", "auto-edit", "git -c core.pager='rm x' status", "ask"),
    ("A", "auto-edit", "tar -cf x.tar --checkpoint=1 --checkpoint-action=exec='rm v' .", "ask"),
    ("D", "full-auto", "tar -I 'sh -c \"rm v\"' -cf a.tar .", "ask"),
    ("A", "auto-edit", "git grep -Orm x", "ask"),
    ("A", "auto-edit", "git grep -n x > /tmp/found", "ask"),
    ("A", "auto-edit", "curl -K settings.txt https://example.com", "ask"),
    ("A", "auto-edit", "sort --compress-program=./x app.py", "ask"),
    ("A", "auto-edit", "sed 'e rm x' app.py", "ask"),
    ("A", "auto-edit", "sed 's/a/b/w out.txt' app.py", "ask"),
    ("A", "auto-edit", "sed -n '1,5p' app.py", "read-only"),
    ("A", "auto-edit", "awk '{ system(\"rm x\") }' app.py", "ask"),
    ("A", "auto-edit", "awk '{print $1}' app.py", "read-only"),
    ("N", "ask", "(( x )); ls", "ask"),
    ("D", "full-auto", "make build", "allow"),
    ("D", "full-auto", "ls -la", "read-only"),
    # writes outside the workspace (section 4), and write options rules cannot cover
    ("A", "auto-edit", "git status > /tmp/x", "ask"),
    ("A", "auto-edit", "git status > out.txt", "allow"),
    ("A", "ask", "git status > out.txt", "ask"),
    ("A", "auto-edit", "git diff --output=/tmp/y", "ask"),
    ("A", "auto-edit", "git diff --output /tmp/y HEAD", "ask"),
    ("A", "ask", "git diff --output=y.patch", "ask"),
    ("A", "auto-edit", "git diff --output=y.patch", "allow"),
    ("A", "auto-edit", "git diff $(echo --output=/tmp/y)", "ask"),
    ("A", "auto-edit", 'git diff "$ARGS"', "ask"),
    ("A", "ask", "git diff HEAD", "read-only"),
    ("A", "auto-edit", "sort -o /tmp/z app.py", "ask"),
    ("A", "auto-edit", "sort -o/tmp/z app.py", "ask"),
    ("A", "auto-edit", "sort --output=/tmp/z app.py", "ask"),
    ("A", "auto-edit", "sort app.py", "read-only"),
    ("A", "auto-edit", "sed -i s/a/b/ /etc/hosts", "ask"),
    ("A", "auto-edit", "sed -i.bak s/a/b/ ../outside.txt", "ask"),
    ("A", "auto-edit", "sed -i s/a/b/ app.py", "allow"),
    ("A", "auto-edit", "dd if=app.py of=/tmp/q", "ask"),
    ("A", "auto-edit", "dd if=app.py of=copy.py", "allow"),
    ("A", "auto-edit", "echo x | tee /tmp/w", "ask"),
    ("A", "auto-edit", "curl -o /tmp/c https://example.com", "ask"),
    ("A", "auto-edit", "curl -sSo/tmp/c https://example.com", "ask"),
    ("A", "auto-edit", "wget -O /tmp/w https://example.com", "ask"),
    ("A", "auto-edit", "wget -P /tmp https://example.com", "ask"),
    ("A", "auto-edit", "cp app.py /tmp/", "ask"),
    ("A", "auto-edit", "cp -t /tmp app.py", "ask"),
    ("A", "auto-edit", "cp app.py copy.py", "allow"),
    ("A", "auto-edit", "mv /tmp/a here.txt", "ask"),
    ("A", "auto-edit", "ln -s app.py ~/link", "ask"),
    ("A", "auto-edit", "ln -s /tmp/x link", "ask"),
    ("A", "auto-edit", "ln -s app.py link", "allow"),
    ("A", "auto-edit", "cp -s /tmp/x l; echo hi > l", "ask"),
    ("A", "auto-edit", "install -m 644 app.py /usr/local/bin/x", "ask"),
    ("A", "auto-edit", "tar -C /tmp -xf a.tar", "ask"),
    ("A", "auto-edit", "tar -czf /tmp/x.tgz .", "ask"),
    ("A", "auto-edit", "tar czf /tmp/x.tgz .", "ask"),
    ("A", "auto-edit", "tar -czf out.tgz .", "allow"),
    ("A", "auto-edit", "tar --file=/tmp/a.tar -c .", "ask"),
    ("A", "auto-edit", "install -d /tmp/x", "ask"),
    ("A", "auto-edit", "git -C /elsewhere status", "ask"),
    ("A", "auto-edit", "git diff HEAD && git worktree add /tmp/wt", "ask"),
    ("A", "auto-edit", "make -C /tmp", "ask"),
    ("A", "auto-edit", "pytest --log-file=/tmp/log", "ask"),
    ("A", "auto-edit", "gcc -o /tmp/a a.c", "ask"),
    ("A", "auto-edit", "cd /tmp && git status > x", "ask"),
    ("A", "auto-edit", "cd sub && git status > x", "allow"),
    ("A", "auto-edit", "cd .. && ls > x", "ask"),
    ("A", "auto-edit", "cd && ls > x", "ask"),
    ("A", "auto-edit", "cd $D && ls > x", "ask"),
    ("A", "auto-edit", 'ls > "$OUT"', "ask"),
    ("A", "auto-edit", "ls > ~/x", "ask"),
    ("A", "auto-edit", "ls > sub/../../x", "ask"),
    ("A", "auto-edit", "ls > /dev/null 2>/dev/stderr", "read-only"),
    ("A", "auto-edit", "find . -fprint /tmp/list", "ask"),
    ("A", "auto-edit", "find /tmp/old -delete", "ask"),
    ("A", "auto-edit", "ls | xargs cat > /tmp/all", "ask"),
    ("D", "full-auto", "git status > /tmp/x", "allow"),
]


@pytest.mark.parametrize(("rules", "mode", "command", "expected"), TABLE)
def test_fail_closed_table(
    tmp_path: Path, rules: str, mode: str, command: str, expected: str
) -> None:
    policy = PermissionPolicy(POLICIES[rules], tmp_path)
    ruling = policy.decide(mode, "shell", "execute", {"command": command})  # type: ignore[arg-type]
    verdict = "allow" if expected == "read-only" else expected
    assert ruling.verdict == verdict, ruling.reason
    assert read_only(parse_shell(command)) == (expected == "read-only")


def test_table_size_and_classes() -> None:
    assert len(TABLE) >= 60
    assert len({row[2] for row in TABLE}) >= 60
    assert {row[3] for row in TABLE} == {"allow", "ask", "deny", "read-only"}


@pytest.mark.parametrize(
    ("command", "named"),
    [
        (ISSUE_EXAMPLE, "value for x"),
        ("x=1; (( x )); git status", "(( ))"),
        ("echo ${x@P}", "${x@P}"),
        ("[[ $x -eq 1 ]]", "-eq"),
        ("f() { ls; }", "function definition"),
        ("eval ls", "eval"),
        ("git status > /tmp/x", "'/tmp/x', outside the workspace"),
        ("git diff --output=/tmp/y", "git --output"),
    ],
)
def test_reason_names_the_construct(tmp_path: Path, command: str, named: str) -> None:
    policy = PermissionPolicy(ALLOWING, tmp_path)
    ruling = policy.decide("auto-edit", "shell", "execute", {"command": command})
    assert ruling.verdict == "ask"
    assert named in ruling.reason


def test_deny_rules_win_inside_what_is_not_understood(tmp_path: Path) -> None:
    policy = PermissionPolicy(DENYING, tmp_path)
    hiding = ("f() { rm x; }", "eval 'rm x'", "echo $((1 + $(rm x)))", "trap 'ls' EXIT; rm x")
    for command in hiding:
        ruling = policy.decide("full-auto", "shell", "execute", {"command": command})
        assert ruling.verdict == "deny", command
        assert "rm *" in ruling.reason


def test_a_link_out_of_the_workspace_is_followed(tmp_path: Path) -> None:
    root = tmp_path / "work"
    (root / "sub").mkdir(parents=True)
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    os.symlink(outside, root / "out")
    policy = PermissionPolicy(ALLOWING, root)
    for command in ("ls > out/x", "cd out && ls > x", "sort -o out/z app.py"):
        ruling = policy.decide("auto-edit", "shell", "execute", {"command": command})
        assert ruling.verdict == "ask", command
    inside = policy.decide("auto-edit", "shell", "execute", {"command": "ls > sub/x"})
    assert inside.verdict == "allow"


def test_no_session_prefix_for_what_is_not_understood(tmp_path: Path) -> None:
    policy = PermissionPolicy(ALLOWING, tmp_path)
    assert policy.session_prefix("x=1; (( x )); make") is None
    assert policy.session_prefix("eval make") is None
    assert policy.session_prefix("make -j4") == "make"
