"""Background children on the real in-process engine (a tiny random stand-in checkpoint).

Their requests reach the one loaded engine at the same time; the engine itself
decides how to serve them (today's torch engine takes them in turn, and batches
them where that is built). What is checked: both children run to their end on
it, each with its own answer, and the session goes on.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from clover_code import protocol as p
from clover_code.config.settings import Settings
from clover_code.engine.local.hf import HFBackend, HFOptions
from tests.sessions import open_session
from tests.tiny_model import build_tiny_checkpoint, script_text
from tests.waiting import async_wait_until


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_checkpoint(tmp_path_factory.mktemp("tiny") / "ckpt")


async def test_background_children_run_on_the_local_engine(
    checkpoint: Path, make_settings: Callable[..., Settings], repo: Path
) -> None:
    # An agent without tools: a short prompt (the tiny tokenizer is byte-level).
    agents = repo / ".clover" / "agents"
    agents.mkdir(parents=True)
    (agents / "brief.md").write_text("---\ndescription: Answers.\ntools: []\n---\nAnswer.\n")
    backend = HFBackend(str(checkpoint), HFOptions(block_size=8, max_tokens=32))
    script_text(backend, "ok</think>\n\nfine")
    events: list[p.Event] = []
    session = await open_session(make_settings(), backend, repo, events)
    runner = session.subagents
    for i in range(2):
        started = await runner.run(f"call-{i}", "brief", f"job {i}", f"Q{i}", background=True)
        assert isinstance(started.display, p.BackgroundTask), started.text
    assert len(session.background_running()) == 2

    def ended() -> list[p.BackgroundTaskFinished]:
        return [e for e in events if isinstance(e, p.BackgroundTaskFinished)]

    await async_wait_until(lambda: len(ended()) == 2, message="both children's end")
    assert sorted(e.task_id for e in ended()) == ["task-1", "task-2"]
    assert all(e.status == "ok" and e.result.startswith("fine") for e in ended()), ended()
    assert all(e.display.tokens > 0 for e in ended())
    await session.close()
