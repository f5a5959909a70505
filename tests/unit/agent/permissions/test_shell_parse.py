"""Breaking bash command lines into the programs they run and the files they write."""

from __future__ import annotations

import pytest

from clover_code.agent.permissions.shell.parse import MAX_COMMANDS, ParsedShell, parse_shell


def programs(parsed: ParsedShell) -> list[tuple[str, ...]]:
    return [cmd.program.argv for cmd in parsed.commands]


def test_every_part_of_a_chain_is_found() -> None:
    parsed = parse_shell("a 1 && b 2 || c; d | e & f")
    assert programs(parsed) == [("a", "1"), ("b", "2"), ("c",), ("d",), ("e",), ("f",)]
    assert parsed.problem is None


def test_substitutions_are_commands_of_their_own() -> None:
    parsed = parse_shell('echo $(id -u) `whoami` <(ls) >(wc -l) "$(date)" $((1 + $(nproc)))')
    found = programs(parsed)
    assert found[0][0] == "echo"
    assert set(found[1:]) == {
        ("id", "-u"),
        ("whoami",),
        ("ls",),
        ("wc", "-l"),
        ("date",),
        ("nproc",),
    }


def test_quoting_is_undone_like_bash() -> None:
    parsed = parse_shell("'r''m' \"-rf\" r\\m $'x' \"a b\"")
    assert programs(parsed) == [("rm", "-rf", "rm", "$'x'", "a b")]
    assert not parsed.commands[0].program.dynamic


@pytest.mark.parametrize("command", ["$X a", "$(echo rm) a", "r{m,} a", "/bin/r? a", "~/bin/x"])
def test_names_known_only_at_run_time_are_dynamic(command: str) -> None:
    parsed = parse_shell(command)
    assert parsed.commands and parsed.commands[0].layers[0].dynamic


def test_wrappers_become_layers() -> None:
    parsed = parse_shell("FOO=1 sudo -u me env -i A=b timeout -k 5 60 nice -n 3 rm -rf x")
    (cmd,) = parsed.commands
    heads = [layer.argv[0] for layer in cmd.layers]
    assert heads == ["FOO=1", "sudo", "env", "timeout", "nice", "rm"]
    assert [layer.transparent for layer in cmd.layers[:-1]] == [True, False, True, True, True]
    assert cmd.program.argv == ("rm", "-rf", "x")


def test_shell_scripts_are_parsed_recursively() -> None:
    parsed = parse_shell("""bash -c "sh -c 'ls; rm x'" """)
    assert programs(parsed) == [("ls",), ("rm", "x")]
    assert [layer.argv[0] for layer in parsed.commands[1].layers] == ["bash", "sh", "rm"]


def test_shell_without_c_runs_a_file() -> None:
    assert programs(parse_shell("bash script.sh")) == [("bash", "script.sh")]


def test_nesting_past_the_limit_fails_closed() -> None:
    command = "ls"
    for _ in range(6):
        command = f'bash -c "{_escape(command)}"'
    assert parse_shell(command).problem is not None


def _escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"')


def test_xargs_and_find_exec_take_more_arguments() -> None:
    parsed = parse_shell("find . -execdir chmod 644 {} ; | xargs -0 -n1 rm")
    found = {cmd.program.argv[0]: cmd.program for cmd in parsed.commands}
    assert found["rm"].open_args
    assert found["chmod"].argv == ("chmod", "644", "{}")


def test_unknown_wrapper_option_fails_closed() -> None:
    parsed = parse_shell("timeout --bogus 5 rm x")
    assert parsed.problem is not None and "--bogus" in parsed.problem


def test_command_v_runs_nothing() -> None:
    assert programs(parse_shell("command -v git")) == [("command", "-v", "git")]


def test_redirections_to_files_are_writes() -> None:
    parsed = parse_shell("a > f1 2>&1 >> f2 &> f3 >| f4 < in 2>/dev/null >&2 >& f5 | tee -a f6")
    assert [w.target for w in parsed.writes] == ["f1", "f2", "f3", "f4", "f5", "f6"]
    # tree-sitter-bash does not know "<>"; the parse error makes it fail closed.
    assert parse_shell("a 3<>f").problem is not None


def test_unknown_write_target() -> None:
    parsed = parse_shell('echo x > "$HOME/out"')
    assert [w.target for w in parsed.writes] == [None]


def test_risky_top_level_assignments_count() -> None:
    assert programs(parse_shell("X=1; ls")) == [("ls",)]
    assert programs(parse_shell("PATH=/tmp; ls")) == [("PATH=/tmp",), ("ls",)]
    assert programs(parse_shell("export PATH=/tmp")) == [("export", "PATH=/tmp")]


@pytest.mark.parametrize(
    ("command", "reason"),
    [
        ("ls\rrm", "control character"),
        ("ls\x00", "control character"),
        ("ls &&", "cannot parse"),
        ("echo 'open", "cannot parse"),
        ("x" * 200_000, "longer than"),
        (" ; ".join(["ls"] * (MAX_COMMANDS + 1)), "more than"),
    ],
)
def test_problems(command: str, reason: str) -> None:
    problem = parse_shell(command).problem
    assert problem is not None and reason in problem


def test_deep_nesting_does_not_recurse() -> None:
    deep = "echo " + "$(" * 2000 + "ls" + ")" * 2000
    parsed = parse_shell(deep)
    assert parsed.commands  # walked without RecursionError


# A deadline, not a speed test: a parse that grew out of bounds would never end.
@pytest.mark.timeout(120)
def test_big_input_is_parsed_whole_within_a_deadline() -> None:
    command = " && ".join(f"echo {i} > /dev/null" for i in range(2000))
    parsed = parse_shell(command)
    assert len(parsed.commands) == 2000
    assert parsed.problem == f"the command runs more than {MAX_COMMANDS} programs"


def test_what_is_not_understood_is_named_and_still_walked() -> None:
    parsed = parse_shell("f() { rm x; }; ls")
    assert parsed.opaque == "a function definition"
    assert programs(parsed) == [("rm", "x"), ("ls",)]  # deny rules still see rm
    assert parse_shell("ls -la | grep x && echo $HOME").opaque is None


def test_cd_targets_are_kept_for_judging_relative_writes() -> None:
    parsed = parse_shell("cd src && cd && cd $D; cd - ; ls > out")
    assert parsed.chdirs == ("src", "~", None, None)


def test_write_options_of_known_programs() -> None:
    line = "sort -o s.txt a | tee -a t.txt; dd if=a of=d.bin; git -C sub diff --output=g"
    parsed = parse_shell(line)
    assert [(w.target, w.via) for w in parsed.writes] == [
        ("s.txt", "sort -o"),
        ("t.txt", "tee"),
        ("d.bin", "dd of="),
        ("sub", "git -C"),
        ("g", "git --output"),
    ]
