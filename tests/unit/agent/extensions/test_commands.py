"""Custom commands: loading command files, and expanding ``/name args`` into a prompt."""

from __future__ import annotations

from pathlib import Path

from clover_code.agent.extensions.commands import (
    BUILTIN_COMMANDS,
    expand,
    load_commands,
    match,
    prepare,
)


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_load_namespaces_front_matter_and_clashes(tmp_path: Path) -> None:
    root, config = tmp_path / "repo", tmp_path / "config"
    project = root / ".clover" / "commands"
    write(
        project / "recheck.md",
        "---\ndescription: Review a file\nargument-hint: FILE\n"
        "allowed-tools: Read, Grep, Bash(git diff:*)\n---\nReview $1 carefully.\n",
    )
    write(project / "frontend" / "lint.md", "# Lint the frontend\nRun the linter on $ARGUMENTS.\n")
    write(project / "help.md", "My own help.\n")
    write(project / "bad.md", "---\ndescription: [oops\n---\nbody\n")
    write(project / "bad name.md", "body\n")
    write(config / "commands" / "recheck.md", "---\ndescription: the user's review\n---\nX\n")
    write(config / "commands" / "mine.md", "---\nallowed-tools: [read_file]\n---\nMine.\n")
    notes: list[str] = []
    commands = load_commands(root, config_dir=config, notes=notes)
    by_name = {c.name: c for c in commands}
    assert sorted(by_name) == ["frontend:lint", "mine", "recheck"]
    review = by_name["recheck"]
    assert review.source == "project" and review.description == "Review a file"
    assert review.argument_hint == "FILE"
    assert review.allowed_tools == {"read_file", "grep", "shell"}
    assert by_name["frontend:lint"].description == "Lint the frontend"
    assert by_name["frontend:lint"].allowed_tools is None
    assert by_name["mine"].allowed_tools == {"read_file"} and by_name["mine"].source == "user"
    assert len(notes) == 3
    assert any("help.md" in n and "built-in" in n for n in notes)
    assert any("bad.md" in n and "not valid YAML" in n for n in notes)
    assert any("bad name.md" in n for n in notes)


def test_the_app_builtins_are_reserved() -> None:
    from clover_code.ui.commands import COMMANDS

    assert {c.name for c in COMMANDS} <= BUILTIN_COMMANDS


def test_expand_arguments_and_files(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    write(root / "src" / "a.py", "A = 1\n")
    write(tmp_path / "secret.txt", "SECRET\n")
    write(
        root / ".clover" / "commands" / "fix.md", "Fix $1 then $2 ($3). All: $ARGUMENTS\n@src/a.py"
    )
    (fix,) = load_commands(root, config_dir=None)
    out = expand(fix, 'src/a.py "two words"', root)
    assert out.text.startswith('Fix src/a.py then two words (). All: src/a.py "two words"')
    assert '<file path="src/a.py">\nA = 1\n</file>' in out.text and not out.notes

    write(root / ".clover" / "commands" / "see.md", "Look at @$1 and mail me@example.com.")
    see = next(c for c in load_commands(root, config_dir=None) if c.name == "see")
    outside = expand(see, "../secret.txt", root)
    assert "SECRET" not in outside.text and "outside the workspace" in outside.notes[0]
    missing = expand(see, "nope.py", root)
    assert missing.notes == ("@nope.py was not included: there is no such file.",)
    denied = expand(see, "src/a.py", root, may_read=lambda path: False)
    assert "A = 1" not in denied.text and "deny rule" in denied.notes[0]


def test_match_and_plain_arguments(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    write(root / ".clover" / "commands" / "go.md", "Go now.")
    commands = load_commands(root, config_dir=None)
    assert match("/go fast please", commands) == (commands[0], "fast please")
    assert match("/usr/bin/env is broken", commands) is None
    assert match("go", commands) is None
    expanded = prepare("/go fast", commands, root)
    assert expanded is not None and expanded.text == "Go now.\n\nARGUMENTS: fast"
