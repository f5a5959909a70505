"""The app under an administrator's ``max_approval``: Shift+Tab cycles only through the
allowed modes, ``/approval`` above them is refused with the sentence and the mode stays,
and the plan question offers only allowed ways to carry a plan out."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from textual.pilot import Pilot

from clover_code import protocol as p
from clover_code.agent.open import SessionOptions, open_session
from clover_code.config.load import load_settings
from clover_code.config.settings import Settings
from clover_code.ui.app import CloverApp
from clover_code.ui.bridge import Emit, SessionLike
from clover_code.ui.plan_question import ask_about_plan
from clover_code.ui.widgets.notice_line import NoticeLine
from tests.fakes import ScriptedBackend
from tests.ui import scenes
from tests.ui.fakes_ui import replay_app
from tests.ui.test_choice_snapshot import PLAN, choices_drawn
from tests.ui.test_flows import until
from tests.ui.test_snapshots import drawn, settle

SnapCompare = Callable[..., bool]
SIZE = (100, 32)


def managed_settings(tmp_path: Path, text: str) -> Settings:
    managed = tmp_path / "managed.toml"
    managed.write_text(text)
    return load_settings(
        {"sessions_dir": tmp_path / "sessions", "sandbox": "none"},
        user_config=tmp_path / "no-user.toml",
        env={"CLOVER_MANAGED_SETTINGS": str(managed)},
    )


def managed_app(settings: Settings, repo: Path) -> CloverApp:
    """The real app around a real session, told the modes the settings allow (as run_app is)."""

    async def factory(emit: Emit, resume: Path | None) -> SessionLike:
        return await open_session(
            settings,
            repo,
            SessionOptions(
                backend=ScriptedBackend([]), emit=emit, approval_mode=settings.approval_or("ask")
            ),
        )

    return CloverApp(
        factory,
        cwd=repo,
        sessions_dir=settings.resolved_sessions_dir(),
        git_status=False,
        approval_modes=settings.managed.approval_modes(),
    )


async def test_shift_tab_wraps_at_the_ceiling_and_approval_above_it_is_refused(
    repo: Path, tmp_path: Path
) -> None:
    settings = managed_settings(tmp_path, '[limits]\nmax_approval = "auto-edit"\n')
    app = managed_app(settings, repo)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.status_bar.approval == "ask")
        await pilot.press("shift+tab")
        await until(pilot, lambda: app.status_bar.approval == "auto-edit")
        await pilot.press("shift+tab")  # past auto-edit: back to the strictest mode
        await until(pilot, lambda: app.status_bar.approval == "read-only")
        await pilot.press("shift+tab", "shift+tab", "shift+tab")
        await until(pilot, lambda: app.status_bar.approval == "auto-edit")
        app.composer.input.insert("/approval full-auto")
        await pilot.press("enter")
        sentence = (
            'approval mode full-auto is refused because max_approval = "auto-edit" is set by '
            f"your administrator in {tmp_path / 'managed.toml'}; it stays auto-edit."
        )
        await until(
            pilot,
            lambda: any(sentence in str(n.text) for n in app.query(NoticeLine)),
            message="the refusal to be shown",
        )
        await until(pilot, lambda: app.status_bar.approval == "auto-edit")


REFUSED = [
    p.ErrorEvent(
        message='approval mode full-auto is refused because max_approval = "auto-edit" is set '
        "by your administrator in /etc/clover-code/managed.toml; it stays auto-edit."
    ),
    p.ApprovalModeChanged(mode="auto-edit"),
]
ALLOWED: tuple[p.ApprovalMode, ...] = ("read-only", "plan", "ask", "auto-edit")


def test_a_refused_mode_change(snap_compare: SnapCompare) -> None:
    async def run_before(pilot: Pilot[Any]) -> None:
        await settle(pilot)
        app = pilot.app
        assert isinstance(app, CloverApp)
        app.bridge.emit(p.ApprovalModeChanged(mode="auto-edit"))
        for event in REFUSED:
            app.bridge.emit(event)
        await drawn(pilot, "the refusal")

    app = replay_app(scenes.OPEN, approval_modes=ALLOWED)
    assert snap_compare(app, terminal_size=(80, 24), run_before=run_before)


def test_plan_question_without_full_auto(snap_compare: SnapCompare) -> None:
    async def run_before(pilot: Pilot[Any]) -> None:
        await settle(pilot)
        app = pilot.app
        assert isinstance(app, CloverApp)
        ask_about_plan(app, app.transcript, app.status_bar, PLAN)
        await choices_drawn(pilot)

    app = replay_app(scenes.OPEN, approval_modes=ALLOWED)
    assert snap_compare(app, terminal_size=(80, 24), run_before=run_before)
