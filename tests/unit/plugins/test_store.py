"""The fingerprint of a plugin's files and the record of installed plugins."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from clover_code.errors import PluginError
from clover_code.plugins.store import InstalledPlugin, PluginStore, plugins_dir, tree_digest
from tests.plugin_files import make_plugin


def test_the_fingerprint_follows_bytes_names_and_the_executable_bit(tmp_path: Path) -> None:
    folder = make_plugin(tmp_path)
    first = tree_digest(folder)
    assert tree_digest(folder) == first
    hook = folder / "bin" / "check"
    hook.write_text(hook.read_text() + "# one more line\n")
    second = tree_digest(folder)
    assert second != first
    hook.chmod(0o644)
    assert tree_digest(folder) != second
    hook.chmod(0o755)
    (folder / "bin" / "check").rename(folder / "bin" / "check2")
    assert tree_digest(folder) not in (first, second)


def test_python_caches_do_not_count(tmp_path: Path) -> None:
    folder = make_plugin(tmp_path)
    before = tree_digest(folder)
    (folder / "bin" / "__pycache__").mkdir()
    (folder / "bin" / "__pycache__" / "check.cpython-311.pyc").write_bytes(b"\0cache")
    assert tree_digest(folder) == before


def test_a_symbolic_link_is_refused(tmp_path: Path) -> None:
    folder = make_plugin(tmp_path)
    os.symlink("/etc/passwd", folder / "commands" / "passwd.md")
    with pytest.raises(PluginError, match=r"passwd.md is a symbolic link; a plugin's files"):
        tree_digest(folder)


def test_the_record_round_trips_and_names_what_is_missing(tmp_path: Path) -> None:
    store = PluginStore(tmp_path / "plugins")
    assert store.read() == {}
    entry = InstalledPlugin(name="a", source="/src/a", kind="folder", path="a", digest="d")
    store.write({"a": entry})
    assert store.read() == {"a": entry}
    assert store.get("a") == entry
    with pytest.raises(PluginError, match=r"no plugin named 'b' is installed \(installed: a\)"):
        store.get("b")


def test_a_damaged_record_is_one_sentence(tmp_path: Path) -> None:
    store = PluginStore(tmp_path)
    store.record.write_text("{not json")
    with pytest.raises(PluginError, match="is damaged; remove it and install your plugins again"):
        store.read()


def test_plugins_live_in_the_user_data_folder(isolated_user_dirs: Path) -> None:
    assert plugins_dir() == isolated_user_dirs / "data" / "clover-code" / "plugins"
