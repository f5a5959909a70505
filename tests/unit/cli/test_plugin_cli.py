"""``clover-code plugin``: install shows what a plugin runs and asks; list, enable,
disable and remove; every refusal is one sentence and leaves nothing behind."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from clover_code.cli.plugin import main
from clover_code.plugins.store import PluginStore
from tests.plugin_files import git_repository, make_plugin


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def leftovers(store: PluginStore) -> list[str]:
    return sorted(p.name for p in store.root.iterdir()) if store.root.is_dir() else []


def test_install_shows_every_program_and_part_then_installs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = make_plugin(tmp_path)
    code, out, err = run(capsys, "install", str(source), "--yes")
    assert code == 0, err
    store = PluginStore()
    folder = store.root / "lint-kit"
    assert out.splitlines() == [
        f"Plugin lint-kit 1.2.0 from {source} (folder)",
        "  Lint commands, a style skill and a command check",
        "It runs these programs on this machine, as you:",
        f"  hook PreToolUse (shell): {folder / 'bin' / 'check'}",
        *[line for line in out.splitlines() if line.startswith("  MCP server lint-kit:echo: ")],
        f"  status line: {folder / 'bin' / 'status'}",
        "It adds:",
        "  commands: /lint-kit:fix",
        "  skills: lint-kit:style",
        "  agents: lint-kit:linter",
        f"Installed lint-kit in {folder}; it is enabled.",
    ]
    assert (folder / "plugin.toml").is_file() and store.get("lint-kit").enabled
    assert leftovers(store) == ["installed.json", "lint-kit"]


def test_without_a_terminal_install_needs_yes_and_leaves_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(capsys, "install", str(make_plugin(tmp_path)))
    assert code == 2
    assert "hook PreToolUse (shell)" in out  # shown before the refusal
    assert err == (
        "clover-code: installing lint-kit needs your yes, and there is no terminal to ask on; "
        "review what it runs (above) and rerun with --yes.\n"
    )
    assert leftovers(PluginStore()) == []


def test_list_disable_enable_remove(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run(capsys, "install", str(make_plugin(tmp_path)), "--yes")
    code, out, _ = run(capsys, "list")
    assert code == 0
    lines = out.splitlines()
    assert lines[0] == f"lint-kit 1.2.0 (enabled) from {tmp_path / 'lint-kit'}"
    assert "  adds commands: /lint-kit:fix" in lines
    assert any(line.startswith("  runs hook PreToolUse (shell): ") for line in lines)
    assert run(capsys, "disable", "lint-kit")[1] == "lint-kit is disabled.\n"
    assert not PluginStore().get("lint-kit").enabled
    assert "(disabled)" in run(capsys, "list")[1]
    assert run(capsys, "enable", "lint-kit")[1] == "lint-kit is enabled.\n"
    assert run(capsys, "remove", "lint-kit")[1] == "Removed lint-kit.\n"
    assert PluginStore().read() == {}
    assert leftovers(PluginStore()) == ["installed.json"]
    assert run(capsys, "list")[1].startswith("No plugins installed.")


def test_a_changed_plugin_is_listed_as_not_usable(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run(capsys, "install", str(make_plugin(tmp_path)), "--yes")
    (PluginStore().root / "lint-kit" / "commands" / "fix.md").write_text("changed\n")
    out = run(capsys, "list")[1]
    assert "  not usable: its files in " in out and "changed since you installed it" in out


def test_install_from_a_git_repository(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    url = git_repository(make_plugin(tmp_path))
    code, out, err = run(capsys, "install", url, "--yes")
    assert code == 0, err
    assert out.startswith(f"Plugin lint-kit 1.2.0 from {url} (git)")
    folder = PluginStore().root / "lint-kit"
    assert (folder / "commands" / "fix.md").is_file() and not (folder / ".git").exists()
    assert os.access(folder / "bin" / "check", os.X_OK)


def test_a_clone_that_fails_is_one_sentence(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = (tmp_path / "nowhere").as_uri()
    code, _, err = run(capsys, "install", url, "--yes")
    assert code == 2
    assert err.startswith(f"clover-code: cannot clone {url}: ") and err.count("\n") == 1
    assert leftovers(PluginStore()) == []


@pytest.mark.parametrize(
    ("make", "sentence"),
    [
        (lambda tmp: tmp / "notes.txt", "is a file, not a plugin folder, a wheel or a source"),
        (lambda tmp: tmp / "no" / "such", "is neither a folder, a git URL nor a Python package"),
        (lambda tmp: tmp / "empty", "has no plugin.toml; a plugin's folder needs one."),
    ],
)
def test_what_is_not_a_plugin_is_one_sentence(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], make: object, sentence: str
) -> None:
    (tmp_path / "notes.txt").write_text("hi")
    (tmp_path / "empty").mkdir()
    target = make(tmp_path)  # type: ignore[operator]
    code, _, err = run(capsys, "install", str(target), "--yes")
    assert code == 2 and sentence in err and err.count("\n") == 1
    assert leftovers(PluginStore()) == []


def test_a_symbolic_link_in_a_plugin_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = make_plugin(tmp_path)
    os.symlink(Path.home(), source / "skills" / "home")
    code, _, err = run(capsys, "install", str(source), "--yes")
    assert code == 2 and "is a symbolic link; a plugin's files must be plain files" in err
    assert leftovers(PluginStore()) == []


def test_installing_a_name_twice_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = make_plugin(tmp_path)
    run(capsys, "install", str(source), "--yes")
    code, _, err = run(capsys, "install", str(source), "--yes")
    assert code == 2
    assert err == (
        f"clover-code: a plugin named lint-kit is already installed (from {source}); "
        "remove it first with: clover-code plugin remove lint-kit\n"
    )
    assert leftovers(PluginStore()) == ["installed.json", "lint-kit"]


def test_an_administrator_can_refuse_plugins(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    managed = tmp_path / "managed.toml"
    managed.write_text('[limits]\ndisabled = ["plugins"]\n')
    monkeypatch.setenv("CLOVER_MANAGED_SETTINGS", str(managed))
    code, out, err = run(capsys, "install", str(make_plugin(tmp_path)), "--yes")
    assert code == 2 and out == ""
    assert err == (
        'clover-code: plugins cannot be installed or enabled because disabled = ["plugins"] '
        f"is set by your administrator in {managed}.\n"
    )
    assert run(capsys, "list")[1].startswith("Plugins are not loaded because disabled = ")


def test_an_unknown_name_lists_the_installed_ones(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run(capsys, "disable", "ghost")
    assert code == 2
    assert err == "clover-code: no plugin named 'ghost' is installed (installed: none).\n"
