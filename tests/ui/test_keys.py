"""``[keys]``: actions bound to other keys in the real app, and a clash or a bad name
refused in one sentence."""

from __future__ import annotations

from pathlib import Path

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


def test_the_settings_reach_the_app_options(tmp_path: Path) -> None:
    settings = ui_settings(
        tmp_path, keys={"interrupt": "ctrl+g"}, editor_mode="vim", theme="nord", notify="osc"
    )
    options = app_options(settings, tmp_path, lambda: settings)
    assert options.keymap == {"interrupt": "ctrl+g"} and options.editor_mode == "vim"
    assert options.theme == "nord" and options.notify == "osc" and options.notify_after == 60
    assert options.statusline() is None


@pytest.mark.integration
@pytest.mark.parametrize(
    ("config", "sentence"),
    [
        ('[keys]\nquit = "escape"\n', b"[keys] gives escape to both interrupt and quit"),
        ('theme = "solarised"\n', b"theme 'solarised' is not one of the app's themes"),
    ],
)
async def test_in_a_terminal_a_refused_setting_is_one_sentence_and_exit_2(
    tmp_path: Path, config: str, sentence: bytes
) -> None:
    import os

    from tests.ui.pty_app import PtyApp
    from tests.waiting import wait_until

    folder = tmp_path / "config" / "clover-code"
    folder.mkdir(parents=True)
    (folder / "config.toml").write_text(config)
    env = {
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
        "XDG_DATA_HOME": str(tmp_path / "data"),
        "PATH": os.environ.get("PATH", os.defpath),
        "TERM": "xterm-256color",
    }
    app = PtyApp(["--base-url", "http://127.0.0.1:9/v1", "--sandbox", "none"], env, (100, 30))
    try:
        out = await app.read_until(sentence, message="the sentence")
        wait_until(lambda: app.proc.poll() is not None, message="clover-code to exit")
        assert app.proc.returncode == 2 and b"Traceback" not in out
        assert out.count(b"clover-code: ") == 1
    finally:
        app.close()
