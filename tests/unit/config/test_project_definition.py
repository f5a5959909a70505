"""Reading the project's sandbox image definition, and what its hash covers."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from clover_code.config.project_definition import (
    definition_digest,
    find_definition,
    parse_jsonc,
    setup_commands,
)
from clover_code.errors import ToolError
from clover_code.tools.sandbox.host_view import host_view


def test_jsonc_comments_and_trailing_commas() -> None:
    text = '// top\n{"a": "x // not a comment", /* b */ "b": [1, 2,],\n "c": "/* kept */",}\n'
    assert parse_jsonc(text) == {"a": "x // not a comment", "b": [1, 2], "c": "/* kept */"}
    assert parse_jsonc('{"q": "say \\"hi\\", // no"}') == {"q": 'say "hi", // no'}


def _write(root: Path, name: str, text: str) -> Path:
    path = root / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_devcontainer_build_and_every_command_form(tmp_path: Path) -> None:
    source = _write(
        tmp_path,
        ".devcontainer/devcontainer.json",
        """{
          "build": {"dockerfile": "Dockerfile", "context": "..", "args": {"V": 1}},
          "onCreateCommand": ["pip", "install", "-e", ".[test]"],
          "postCreateCommand": {"one": "make deps", "two": ["echo", "a b"]},
          "containerEnv": {"X": "y"},
        }""",
    )
    found = find_definition(tmp_path)
    assert found is not None and found.source == source
    assert found.dockerfile == tmp_path / ".devcontainer" / "Dockerfile"
    assert found.context == tmp_path and found.args == {"V": "1"}
    assert found.commands == ("pip install -e '.[test]'", "make deps", "echo 'a b'")
    assert found.env == {"X": "y"}
    assert setup_commands(found, ("pytest --version", " ")) == (*found.commands, "pytest --version")


def test_devcontainer_image_and_the_clover_dockerfile(tmp_path: Path) -> None:
    _write(tmp_path, ".clover/sandbox/Dockerfile", "FROM x\n")
    found = find_definition(tmp_path)
    assert found is not None and found.dockerfile == tmp_path / ".clover/sandbox/Dockerfile"
    _write(tmp_path, ".devcontainer.json", '{"image": "local/tools:1"}')
    found = find_definition(tmp_path)
    assert found is not None and found.image == "local/tools:1"  # the devcontainer wins
    assert find_definition(tmp_path / "nothing-here") is None


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ('{"name": "x"}', "names neither an image nor build.dockerfile"),
        ('{"image": "x", "postCreateCommand": 3}', "postCreateCommand must be"),
        ("{not json", "cannot read"),
    ],
)
def test_a_bad_devcontainer_names_the_file(tmp_path: Path, text: str, says: str) -> None:
    _write(tmp_path, ".devcontainer/devcontainer.json", text)
    with pytest.raises(ToolError) as info:
        find_definition(tmp_path)
    assert says in str(info.value) and "devcontainer.json" in str(info.value)


def test_the_digest_follows_the_definition_and_the_files_it_copies(tmp_path: Path) -> None:
    _write(
        tmp_path,
        ".clover/sandbox/Dockerfile",
        "ARG CLOVER_BASE\nFROM ${CLOVER_BASE}\nCOPY --chown=1:1 tools/ /opt/tools/\n"
        "COPY --from=other /x /y\n",
    )
    _write(tmp_path, ".clover/sandbox/tools/a.sh", "echo a\n")
    _write(tmp_path, ".clover/sandbox/unused.txt", "not copied\n")
    found = find_definition(tmp_path)

    def digest(setup: tuple[str, ...] = (), base: str = "base:1") -> str:
        return definition_digest(tmp_path, found, setup, base)

    first = digest()
    assert digest() == first
    _write(tmp_path, ".clover/sandbox/unused.txt", "still not copied\n")
    assert digest() == first
    _write(tmp_path, ".clover/sandbox/tools/a.sh", "echo changed\n")
    changed = digest()
    assert changed != first
    assert digest(("make",)) != changed and digest(base="base:2") != changed


def test_host_view_hides_credentials_and_keeps_tools(tmp_path: Path) -> None:
    home, root = tmp_path / "home", tmp_path / "home" / "src" / "proj"
    for name in (".ssh/id_rsa", ".config/myapp/api_token", ".pyenv/versions/x/token.py"):
        _write(home, name, "x")
    _write(home, ".local/bin/tool", "x")
    _write(root, "secrets.yaml", "in the workspace: the workspace's own business")
    env = {"HOME": str(home), "PATH": f"/tmp/elsewhere:{home}/.local/bin:relative", "K": "v"}
    view = host_view(root, (os.getuid(), os.getgid()), concealed=(str(tmp_path),), host_env=env)
    assert view.home == str(home) and view.env["HOME"] == str(home)
    assert sorted(view.hidden) == [str(home / ".config/myapp/api_token"), str(home / ".ssh")]
    assert view.env["PATH"] == f"/tmp/elsewhere:{home}/.local/bin"  # no relative entries
    assert "--ro-bind" in view.binds and "K" not in view.env
    # A workspace inside a directory named like a credential stays visible.
    inside = home / "secret-project" / "app"
    inside.mkdir(parents=True)
    view = host_view(inside, (os.getuid(), os.getgid()), concealed=(str(tmp_path),), host_env=env)
    assert str(home / "secret-project") not in view.hidden
    # Started in the home itself: the workspace is the home, credentials still hidden.
    view = host_view(home, (os.getuid(), os.getgid()), concealed=(str(tmp_path),), host_env=env)
    assert str(home / ".config/myapp/api_token") in view.hidden
