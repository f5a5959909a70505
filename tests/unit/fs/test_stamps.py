"""File stamps: what was worked out from files is served only while they are unchanged."""

from __future__ import annotations

import os
from pathlib import Path

from clover_code.fs.stamps import Remembered, Stamps, stamps
from tests.waiting import wait_until


def _settled(*paths: Path) -> Stamps:
    """The stamps of ``paths`` once they can be trusted (just-written files cannot)."""
    taken: list[Stamps] = []

    def ready() -> bool:
        found = stamps(list(paths))
        taken.extend([found] if found is not None else [])
        return found is not None

    wait_until(ready, message="the files' times to settle")
    return taken[-1]


def test_every_kind_of_change_gives_new_stamps(tmp_path: Path) -> None:
    config = tmp_path / "config"
    missing = tmp_path / "missing"
    config.write_text("[core]\n")
    before = _settled(config, missing)
    assert before[1] is None, "a missing file is stamped as missing"
    assert stamps([config, missing]) == before, "nothing changed"

    config.write_text("[core]\n")  # same bytes, same size: the change time still moves
    assert stamps([config, missing]) != before
    again = _settled(config, missing)
    missing.write_text("")
    assert stamps([config, missing]) != again
    after = _settled(config, missing)
    replacement = tmp_path / "new"
    replacement.write_text("[core]\n")
    os.replace(replacement, config)  # another file in its place
    assert stamps([config, missing]) != after


def test_a_file_changed_a_moment_ago_is_not_trusted(tmp_path: Path) -> None:
    config = tmp_path / "config"
    config.write_text("x")
    _settled(config)
    config.write_text("y")
    assert stamps([config]) is None


def test_a_symbolic_link_is_never_trusted(tmp_path: Path) -> None:
    target = tmp_path / "target"
    target.write_text("x")
    (tmp_path / "link").symlink_to(target)
    _settled(target)
    assert stamps([tmp_path / "link"]) is None


def test_a_value_is_served_only_for_the_stamps_it_was_stored_with(tmp_path: Path) -> None:
    config = tmp_path / "config"
    config.write_text("x")
    taken = _settled(config)
    remembered: Remembered[str] = Remembered(2)
    remembered.put("repo", taken, "worked out")
    assert remembered.get("repo", taken) == "worked out"
    assert remembered.get("repo", ((1, 2, 3, 4),)) is None
    remembered.put("b", (), "b")
    remembered.put("c", (), "c")
    assert remembered.get("repo", taken) is None, "only the newest two are kept"
    assert remembered.get("c", ()) == "c"
