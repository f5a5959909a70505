"""``plugin.toml``: what it names is read, each mistake is one sentence, and the
commands it names are made runnable from the plugin's folder."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

import pytest

from clover_code.errors import PluginError
from clover_code.plugins.manifest import read_plugin
from tests.plugin_files import make_plugin


def write(folder: Path, text: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "plugin.toml").write_text(text)
    return folder


def test_a_plugin_names_each_part_and_they_are_namespaced(tmp_path: Path) -> None:
    folder = make_plugin(tmp_path)
    plugin = read_plugin(folder)
    assert plugin.name == "lint-kit" and plugin.manifest.version == "1.2.0"
    assert plugin.part("commands") == folder / "commands"
    assert plugin.bundles() == [
        "commands: /lint-kit:fix",
        "skills: lint-kit:style",
        "agents: lint-kit:linter",
    ]
    assert list(plugin.mcp_servers()) == ["lint-kit:echo"]


def test_its_commands_run_from_its_folder(tmp_path: Path) -> None:
    folder = make_plugin(tmp_path)
    plugin = read_plugin(folder)
    (hook,) = plugin.hooks()["PreToolUse"]
    assert hook.matcher == "shell"
    assert shlex.split(hook.command) == [str(folder / "bin" / "check")]
    assert plugin.statusline_command() == shlex.join([str(folder / "bin" / "status")])
    server = plugin.mcp_servers()["lint-kit:echo"]
    assert server.command == sys.executable
    runs = plugin.runs()
    assert runs[0] == f"hook PreToolUse (shell): {folder / 'bin' / 'check'}"
    assert runs[1].startswith(f"MCP server lint-kit:echo: {sys.executable} ")
    assert runs[2] == f"status line: {folder / 'bin' / 'status'}"


def test_plugin_root_is_expanded_in_mcp_arguments_and_environment(tmp_path: Path) -> None:
    folder = write(
        tmp_path / "p",
        'name = "p"\n[mcp_servers.docs]\ncommand = "./bin/docs"\n'
        'args = ["--index", "${CLOVER_PLUGIN_ROOT}/index"]\n'
        'env = { DATA = "${CLOVER_PLUGIN_ROOT}" }\n',
    )
    server = read_plugin(folder).mcp_servers()["p:docs"]
    assert server.command == str(folder / "bin" / "docs")
    assert server.args == ["--index", f"{folder}/index"]
    assert server.env == {"DATA": str(folder)}


@pytest.mark.parametrize(
    ("text", "sentence"),
    [
        ('name = "p"\ncomands = "c"\n', "unknown key 'comands'; did you mean 'commands'?"),
        ('version = "1"\n', "'name' is missing; every plugin needs it."),
        ('name = "Lint Kit"\n', "bad value 'Lint Kit' for 'name': a plugin's name is 1 to 40"),
        ('name = "p"\n[[hooks.Bogus]]\ncommand = "x"\n', "for 'hooks.Bogus'"),
        ('name = "p"\n[mcp_servers.s]\ntype = "http"\n', "an http server needs a url"),
        ('name = "p"\ncommands = "../elsewhere"\n', "lies outside the plugin's folder"),
        ('name = "p"\nskills = "skills"\n', "skills = 'skills' is not a folder of the plugin"),
        ('name = "p"\nagents = "/etc"\n', "must be a folder relative to the plugin's own"),
        ('name = "p"\n[hooks\n', "is not valid TOML"),
        (
            'name = "p"\n[mcp_servers.s]\ncommand = "x"\nport = 1\n',
            "key 'port' in 'mcp_servers.s'.",
        ),
    ],
)
def test_each_mistake_is_one_sentence_naming_the_file(
    tmp_path: Path, text: str, sentence: str
) -> None:
    (tmp_path / "elsewhere").mkdir()
    folder = write(tmp_path / "p", text)
    with pytest.raises(PluginError) as caught:
        read_plugin(folder)
    message = str(caught.value)
    assert sentence in message
    assert str(folder / "plugin.toml") in message
    assert "\n" not in message and "Traceback" not in message


def test_two_mistakes_are_two_sentences(tmp_path: Path) -> None:
    folder = write(tmp_path / "p", 'name = "P"\nwhatever = 1\n')
    with pytest.raises(PluginError) as caught:
        read_plugin(folder)
    message = str(caught.value)
    assert "unknown key 'whatever'" in message and "bad value 'P' for 'name'" in message


def test_a_folder_without_plugin_toml_says_so(tmp_path: Path) -> None:
    with pytest.raises(PluginError, match=r"has no plugin\.toml; a plugin's folder needs one"):
        read_plugin(tmp_path)
