"""The app's settings: [keys] names checked in one sentence naming the file, the
trust a project's [keys] and status line need, and saving a value to the user config."""

from __future__ import annotations

from pathlib import Path

import pytest

from clover_code.config.app_settings import key_problem
from clover_code.config.load import load_settings
from clover_code.config.trust import TrustStore
from clover_code.config.user_file import set_user_value
from clover_code.errors import ConfigError


@pytest.mark.parametrize(
    ("toml", "sentence"),
    [
        ('[keys]\nfrobnicate = "x"', "names the unknown action 'frobnicate' (actions: interrupt"),
        ('[keys]\nquit = "ctrl+nope+x"', "'nope' in 'ctrl+nope+x' is not a modifier"),
        ('[keys]\nquit = "ctrl+"', "'ctrl+' has no key after its modifiers"),
        ('[keys]\nquit = "ctrl+q,"', "has an empty key"),
        ('[keys]\nquit = "ctrl+bananas"', "'bananas' in 'ctrl+bananas' is not a key name"),
        ('theme = ""', "'theme'"),
        ('notify = "loud"', "'notify'"),
        ('editor_mode = "emacs"', "'editor_mode'"),
        ("statusline_interval = 1", "'statusline_interval'"),
    ],
)
def test_a_bad_value_is_one_sentence_naming_the_file(
    tmp_path: Path, toml: str, sentence: str
) -> None:
    user = tmp_path / "config.toml"
    user.write_text(toml + "\n")
    with pytest.raises(ConfigError) as caught:
        load_settings(user_config=user, env={})
    message = str(caught.value)
    assert sentence in message and str(user) in message
    assert "\n" not in message.strip()


@pytest.mark.parametrize("key", ["ctrl+g", "f5", "escape", "A", "?", "question_mark", "alt+up,f2"])
def test_good_keys(key: str) -> None:
    assert key_problem(key) is None


def test_a_projects_keys_and_status_line_apply_only_once_trusted(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / ".clover").mkdir(parents=True)
    (repo / ".clover" / "config.toml").write_text(
        'theme = "nord"\nstatusline_command = "/usr/bin/true"\n[keys]\napproval_mode = "space"\n'
    )
    store = TrustStore(tmp_path / "store.json")

    def load(**trust: bool) -> object:
        return load_settings(
            repo_root=repo, user_config=tmp_path / "none.toml", env={}, store=store, **trust
        )

    untrusted = load()
    assert untrusted.theme == "nord"  # type: ignore[attr-defined]  # neutral: applies
    assert untrusted.keys == {} and untrusted.statusline_command is None  # type: ignore[attr-defined]
    report = untrusted.project_trust  # type: ignore[attr-defined]
    loosening = sorted(item.split()[0] for item in report.files[0].loosening)
    assert loosening == ["keys", "statusline_command"]
    trusted = load(trust_project=True)
    assert trusted.keys == {"approval_mode": "space"}  # type: ignore[attr-defined]
    assert trusted.statusline_command == "/usr/bin/true"  # type: ignore[attr-defined]


def test_a_value_is_saved_keeping_the_rest(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    set_user_value(config, "theme", "nord")  # no file yet
    assert config.read_text() == 'theme = "nord"\n'
    config.write_text(
        '# my settings\nmodel = "m"  # the model\ntheme = "nord"\n\n[keys]\nquit = "f10"'
    )
    set_user_value(config, "theme", 'gruvbox "x"')
    assert config.read_text() == (
        '# my settings\nmodel = "m"  # the model\ntheme = "gruvbox \\"x\\""\n\n[keys]\nquit = "f10"'
    )
    config.write_text('[keys]\nquit = "f10"\n')  # only a table: the key goes above it
    set_user_value(config, "theme", "nord")
    assert config.read_text() == 'theme = "nord"\n[keys]\nquit = "f10"\n'


def test_a_file_that_cannot_be_changed_safely_stays_as_it_was(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    broken = 'model = "m\n'
    config.write_text(broken)
    with pytest.raises(ConfigError, match="is not valid TOML"):
        set_user_value(config, "theme", "nord")
    assert config.read_text() == broken
    # A multi-line string that looks like a table: the edit would change another value.
    tricky = 'notes = """\n[not a table]\n"""\n'
    config.write_text(tricky)
    with pytest.raises(ConfigError, match="could not be changed safely to set theme"):
        set_user_value(config, "theme", "nord")
    assert config.read_text() == tricky
