"""A local engine is loaded once per process, off the event loop, and lent to every session."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from clover_code.config.settings import Settings
from clover_code.engine import events as ev
from clover_code.engine.base import ChatRequest
from clover_code.engine.local import hf
from clover_code.engine.local.hf import HFBackend
from clover_code.engine.local.shared import SharedBackend
from clover_code.engine.select import is_local, open_backend
from clover_code.errors import EngineError
from tests.fakes import ScriptedBackend, text_response
from tests.tiny_model import build_tiny_checkpoint
from tests.waiting import PATIENCE, async_wait_until, within


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_checkpoint(tmp_path_factory.mktemp("tiny") / "ckpt")


async def test_one_backend_lent_to_many_sessions_and_closed_once() -> None:
    opened: list[ScriptedBackend] = []

    async def opener() -> Any:
        opened.append(ScriptedBackend([]))
        return opened[-1]

    shared = SharedBackend()
    first, second = await asyncio.gather(shared.lend(opener), shared.lend(opener))
    assert len(opened) == 1 and shared.loaded
    assert first.model == opened[0].model and first.block_size == opened[0].block_size
    assert first.inner is second.inner  # type: ignore[attr-defined]
    await first.aclose()  # a session ends: the model stays loaded
    assert not opened[0].closed
    await shared.close()
    assert opened[0].closed and not shared.loaded
    await shared.lend(opener)  # after close, the next session loads it again
    assert len(opened) == 2
    await shared.close()


async def test_each_loan_keeps_its_own_sessions_failure() -> None:
    refused = EngineError("the server refused the API key")
    engine = ScriptedBackend([[ev.Failed(refused), ev.Finished("error")], text_response("hi")])
    engine.notices = ("decoder: builtin",)

    async def opener() -> Any:
        return engine

    shared = SharedBackend()
    first, second = await shared.lend(opener), await shared.lend(opener)
    assert first.notices == second.notices == ("decoder: builtin",)
    request = ChatRequest(messages=[{"role": "user", "content": "x"}])
    assert ev.Failed(refused) in [e async for e in first.stream(request)]
    assert [e async for e in second.stream(request)]
    # The failure is the first session's: the second one's response did not fail.
    assert first.failure is refused and second.failure is None
    await shared.close()


async def test_the_hf_engine_loads_off_the_event_loop_after_a_notice(
    checkpoint: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = Settings(engine="hf", model_path=str(checkpoint), block_size=8)
    assert is_local(settings) and not is_local(Settings(base_url="http://x/v1"))
    # The real load, held at its start until the test has seen the event loop
    # run on: a load that blocked the loop would never be released.
    entered = threading.Event()
    release = threading.Event()
    notices: list[str] = []
    seen_at_start: list[str] = []
    real_load = hf.load_checkpoint

    def held_load(path: Path, **settings: Any) -> Any:
        seen_at_start.extend(notices)
        entered.set()
        if not release.wait(timeout=PATIENCE):
            raise AssertionError("the load was never released: it blocked the event loop")
        return real_load(path, **settings)

    monkeypatch.setattr(hf, "load_checkpoint", held_load)
    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        while True:
            await asyncio.sleep(0.001)
            ticks += 1

    loading = asyncio.create_task(open_backend(settings, notices.append))
    ticking = asyncio.create_task(ticker())
    try:
        await async_wait_until(entered.is_set, message="the load to start")
        during = ticks
        await async_wait_until(
            lambda: ticks >= during + 3, message="the event loop to run while the load is held"
        )
        release.set()
        backend = await within(loading, message="the load to finish once released")
    finally:
        release.set()
        ticking.cancel()
    assert isinstance(backend, HFBackend)
    # The notice came before the load began.
    assert seen_at_start and seen_at_start[0].startswith(f"Loading {checkpoint} with the hf engine")
    await backend.aclose()


class _QuietEditor:
    """Stands in for the editor's side of the connection: accepts every call."""

    def __getattr__(self, name: str) -> Any:
        async def call(*args: Any, **kwargs: Any) -> None:
            return None

        return call


async def test_acp_sessions_share_one_loaded_checkpoint(checkpoint: Path, tmp_path: Path) -> None:
    from clover_code.acp.agent import CloverAgent

    repo = tmp_path / "repo"
    repo.mkdir()
    cli = {
        "engine": "hf",
        "model_path": str(checkpoint),
        "block_size": 8,
        "sandbox": "none",
        "sessions_dir": str(tmp_path / "sessions"),
    }
    agent = CloverAgent(cli)
    agent.on_connect(_QuietEditor())  # type: ignore[arg-type]
    first = await agent.new_session(cwd=str(repo))
    second = await agent.new_session(cwd=str(repo))
    backends = [agent._sessions[s.session_id].session.backend for s in (first, second)]
    # Each session's engine is a loan (which keeps the error its own responses ended with).
    inner = [getattr(b, "inner", None) for b in backends]
    assert isinstance(inner[0], HFBackend) and inner[0] is inner[1]  # loaded once
    await agent.close()
    assert inner[0]._model is None  # released when the agent shut down


def test_quitting_during_a_load_does_not_wait_for_it() -> None:
    # asyncio.to_thread would keep the process alive until the 600 s "load" ended;
    # the deadline is far shorter than that and far longer than a healthy exit.
    script = (
        "import asyncio, time\n"
        "from clover_code.engine.local.worker import in_daemon_thread\n"
        "async def main():\n"
        "    task = asyncio.create_task(in_daemon_thread(lambda: time.sleep(600)))\n"
        "    await asyncio.sleep(0.2)\n"
        "    task.cancel()\n"
        "asyncio.run(main())\n"
    )
    done = subprocess.run([sys.executable, "-c", script], timeout=PATIENCE, capture_output=True)
    assert done.returncode == 0, done.stderr


async def test_a_failed_load_raises_where_it_was_awaited() -> None:
    from clover_code.engine.local.worker import in_daemon_thread

    def broken() -> None:
        raise ValueError("no weights")

    with pytest.raises(ValueError, match="no weights"):
        await in_daemon_thread(broken)
    assert await in_daemon_thread(lambda: 41 + 1) == 42
