"""The status bar at 80 columns: approval mode and sandbox always stay, a long model id
is cut in the middle, and an instant reply shows no rate."""

from __future__ import annotations

from clover_code import protocol as p
from clover_code.ui.turn_stats import TurnStats
from clover_code.ui.widgets.status_bar import Speed, shorten_middle
from tests.ui import scenes
from tests.ui.fakes_ui import replay_app
from tests.ui.test_flows import until

MODEL = "Qwen/Qwen3-Coder-480B-A35B-Instruct-FP8-dynamic-preview-with-a-very-long-suffix"


async def test_narrow_bar_keeps_approval_and_sandbox_and_cuts_the_model() -> None:
    started = scenes.LONG_MODEL.model_copy(update={"model": MODEL, "sandbox": "bwrap"})
    app = replay_app([started])
    async with app.run_test(size=(80, 24)) as pilot:
        await until(pilot, lambda: app.started is not None)
        bar = app.status_bar
        bar.branch = "feature/a-rather-long-branch-name"
        bar.dirty = True
        bar.context_used = 50_000
        bar.speed = Speed(512.0, 16.0, 3.5)
        await pilot.pause(0.1)
        text = str(bar.render())
        assert len(text) <= 78
        assert "bwrap" in text and "auto-edit" in text
        assert "Qwen/Qwen" in text and "…" in text and text.count("suffix") == 1
        assert "tok/s" not in text  # the rate went first, before the model's name


async def test_wide_bar_gives_the_context_its_unit() -> None:
    app = replay_app([scenes.LONG_MODEL])
    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: app.started is not None)
        app.status_bar.context_used = 120
        await pilot.pause(0.1)
        assert "ctx 0% 120 tok" in str(app.status_bar.render())
        app.status_bar.context_used = 5_400
        await pilot.pause(0.1)
        assert "5.4k tok" in str(app.status_bar.render())


def test_shorten_middle() -> None:
    assert shorten_middle("short", 10) == "short"
    cut = shorten_middle("Qwen3-Coder-480B-A35B-Instruct-FP8", 15)
    assert len(cut) == 15 and cut.startswith("Qwen3-C") and cut.endswith("ct-FP8")


def test_an_instant_reply_has_no_rate() -> None:
    stats = TurnStats()
    stats.usage(
        p.UsageReport(
            prompt_tokens=10, completion_tokens=4, context_window=100, tokens_per_second=4000.0
        )
    )
    assert stats.speed() == Speed(None, None, None)
    stats.reset()
    stats.usage(
        p.UsageReport(
            prompt_tokens=10, completion_tokens=400, context_window=100, tokens_per_second=500.0
        )
    )
    assert stats.speed().tokens_per_second == 500.0


async def test_experts_per_layer_reach_the_bar_and_cost() -> None:
    from tests.ui.test_flows import type_and_send
    from tests.ui.test_prompt import notes

    app = replay_app([scenes.LONG_MODEL], [scenes.local_moe_turn()])
    async with app.run_test(size=(160, 40)) as pilot:
        await until(pilot, lambda: app.started is not None)
        await type_and_send(pilot, "fix it")
        await until(pilot, lambda: "exp/layer" in str(app.status_bar.render()))
        assert "9.1 exp/layer" in str(app.status_bar.render())
        await type_and_send(pilot, "/cost")
        await until(pilot, lambda: "Routed experts: 9.1 distinct" in notes(app))
