"""The app on the local block-diffusion engine (tiny stand-in): drafts live, OOM survived."""

from __future__ import annotations

import functools
import time
from pathlib import Path
from typing import Any

import pytest
import torch

from clover_code.config.settings import Settings
from clover_code.engine.local.hf import HFBackend, HFOptions
from clover_code.ui.widgets.notice_line import NoticeLine
from tests.tiny_model import build_tiny_checkpoint, script_text
from tests.ui.fakes_ui import scripted_app
from tests.ui.test_flows import answers, type_and_send, until


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_checkpoint(tmp_path_factory.mktemp("tiny") / "ckpt")


async def test_out_of_memory_is_one_sentence_and_the_next_prompt_decodes(
    checkpoint: Path, repo: Path, settings: Settings
) -> None:
    backend = HFBackend(str(checkpoint), HFOptions(block_size=8))
    # Blocks of several steps, each forward taking a GPU's while, so that drafts reach the
    # screen before their block is committed (the app drops a draft whose block is).
    script_text(backend, "ok</think>\n\nAll good: the engine answered.", unsure=True)
    scripted = backend._model.forward
    failures = [torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 20.00 GiB")]

    @functools.wraps(scripted)
    def forward(*args: Any, **kwargs: Any) -> Any:
        if failures:
            raise failures.pop()
        time.sleep(0.02)
        return scripted(*args, **kwargs)

    backend._model.forward = forward
    app = scripted_app(backend, repo, settings)  # type: ignore[arg-type]
    async with app.run_test(size=(100, 30)) as pilot:
        await until(pilot, lambda: app.started is not None)
        await type_and_send(pilot, "hello")

        def notes_now() -> list[str]:
            return [str(n.text) for n in app.query(NoticeLine)]

        # The turn may not have started yet when the prompt is sent: wait for its end
        # as the user sees it, the error line, then for the turn to be over.
        await until(pilot, lambda: any("ran out of memory" in n for n in notes_now()))
        await until(pilot, lambda: not app.turn_running)
        notes = notes_now()
        oom = [n for n in notes if "ran out of memory" in n]
        assert len(oom) == 1 and "Traceback" not in oom[0], notes
        await type_and_send(pilot, "again")
        await until(pilot, lambda: "engine answered" in answers(app))
        await until(pilot, lambda: not app.turn_running)
        assert app.transcript.denoise.drafts_seen > 0  # the denoising was shown live
        assert app.is_running
    await backend.aclose()


async def test_resume_in_the_app_reuses_the_loaded_checkpoint(
    checkpoint: Path, repo: Path, tmp_path: Path
) -> None:
    from clover_code import protocol as p
    from clover_code.agent.engines import Engines
    from clover_code.ui.run import session_factory
    from tests.ui.fakes_ui import ui_settings

    settings = ui_settings(tmp_path, engine="hf", model_path=str(checkpoint), block_size=8)
    engines = Engines()
    factory = session_factory(settings, repo, engines)
    events: list[p.Event] = []
    first = await factory(events.append, None)
    await first.close()  # /resume closes the running session first
    second = await factory(events.append, None)
    loading = [e for e in events if isinstance(e, p.Notice) and e.text.startswith("Loading")]
    assert len(loading) == 1  # the checkpoint was loaded once, for the first session
    inner = second.backend.inner  # type: ignore[attr-defined]
    assert isinstance(inner, HFBackend) and inner._model is not None
    await second.close()
    await engines.close()
    assert inner._model is None


async def test_the_answers_fill_confidences_reach_the_screen(
    checkpoint: Path, repo: Path, settings: Settings
) -> None:
    from textual.content import Content

    from clover_code.ui.widgets.answer import Answer

    backend = HFBackend(str(checkpoint), HFOptions(block_size=8))
    text = "ok</think>\n\nThe fix is one sign."
    tokens = backend.tokenizer
    start = len(tokens(text[: text.index("one")], add_special_tokens=False)["input_ids"])
    # "one" (three byte tokens) is filled with probability 0.3, the rest with 0.99.
    script_text(backend, text, confidence=lambda i: 0.3 if start <= i < start + 3 else 0.99)
    app = scripted_app(backend, repo, settings)  # type: ignore[arg-type]
    async with app.run_test(size=(100, 30)) as pilot:
        await until(pilot, lambda: app.started is not None)
        await type_and_send(pilot, "hello")
        await until(pilot, lambda: "one sign" in answers(app) and not app.turn_running)
        answer = app.query(Answer).last()
        await until(pilot, lambda: answer.pieces is not None, message="the confidences")
        await pilot.press("f4")
        await until(pilot, lambda: answer.shaded, message="the shaded answer")
        shaded = answer.shaded_text
        assert isinstance(shaded, Content)
        low = [shaded.plain[s.start : s.end] for s in shaded.spans if s.style == "on $error-muted"]
        assert "".join(low) == "one"
