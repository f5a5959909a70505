"""``[keys]``: actions bound to other keys in the real app, and a clash or a bad name
refused in one sentence."""

from __future__ import annotations

import pytest
from textual.binding import Binding

from clover_code import protocol as p
from clover_code.config.app_settings import KEY_ACTIONS
from clover_code.errors import ConfigError
from clover_code.ui.app import CloverApp
from clover_code.ui.options import AppOptions, check_options
from clover_code.ui.run import app_options
from tests.ui import scenes
from tests.ui.fakes_ui import replay_app, ui_settings
from tests.ui.test_flows import until

SCREENS = {"the app": CloverApp.BINDINGS}


def test_every_action_is_a_binding_and_every_binding_with_an_id_an_action() -> None:
    ids = {
        b.id for bindings in SCREENS.values() for b in bindings if isinstance(b, Binding) and b.id
    }
    assert ids == set(KEY_ACTIONS)


async def test_a_remapped_interrupt_works_and_its_old_key_does_not() -> None:
    options = AppOptions(keymap={"interrupt": "ctrl+g"})
    app = replay_app(scenes.OPEN, [scenes.running_command()], options=options)
    async with app.run_test(size=(100, 30)) as pilot:
        await until(pilot, lambda: app.started is not None, message="the session to open")
        app.composer.input.insert("run the tests")
        await pilot.press("enter")
        await until(pilot, lambda: app.turn_running, message="the turn to start")
        replay = app.replay  # type: ignore[attr-defined]
        await pilot.press("escape")
        await pilot.pause()
        assert not any(isinstance(op, p.Interrupt) for op in replay.ops)
        await pilot.press("ctrl+g")
        await until(
            pilot,
            lambda: any(isinstance(op, p.Interrupt) for op in replay.ops),
            message="ctrl+g to interrupt",
        )


@pytest.mark.parametrize(
    ("keymap", "sentence"),
    [
        ({"quit": "escape"}, "gives escape to both interrupt and quit (the app)"),
        ({"quit": "f2", "interrupt": "f2"}, "gives f2 to both"),
    ],
)
def test_a_key_given_to_two_actions_is_one_sentence(keymap: dict[str, str], sentence: str) -> None:
    with pytest.raises(ConfigError, match=sentence.replace("(", r"\(").replace(")", r"\)")):
        check_options(AppOptions(keymap=keymap), SCREENS)


def test_keys_moved_out_of_each_others_way_are_fine() -> None:
    check_options(AppOptions(keymap={"quit": "escape", "interrupt": "ctrl+g"}), SCREENS)


def test_the_settings_reach_the_app_options(tmp_path: object) -> None:
    from pathlib import Path

    assert isinstance(tmp_path, Path)
    settings = ui_settings(
        tmp_path, keys={"interrupt": "ctrl+g"}, editor_mode="vim", theme="nord", notify="osc"
    )
    options = app_options(settings, tmp_path, lambda: settings)
    assert options.keymap == {"interrupt": "ctrl+g"} and options.editor_mode == "vim"
    assert options.theme == "nord" and options.notify == "osc" and options.notify_after == 60
    assert options.statusline() is None
