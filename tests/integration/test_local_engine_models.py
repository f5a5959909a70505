"""Models and images on the local hf engine (tiny random stand-in, a real checkpoint load).

A local engine holds the one checkpoint it loaded: ``/model`` lists only it,
a switch is refused with one sentence, and (Clover being text-only) an image
attached to a prompt is left out with one sentence while the text is decoded.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from clover_code import protocol as p
from clover_code.agent.open import SessionOptions, load, open_session
from clover_code.agent.permissions.approval import RefuseApprover
from clover_code.config.load import load_settings
from clover_code.engine.local.hf import HFBackend, HFOptions
from clover_code.engine.messages import IMAGE_LEFT_OUT
from tests.tiny_model import build_tiny_checkpoint, script_text

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_checkpoint(tmp_path_factory.mktemp("tiny") / "ckpt")


async def test_the_local_engine_lists_its_checkpoint_refuses_a_switch_and_leaves_images_out(
    checkpoint: Path, tmp_path: Path
) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    backend = HFBackend(str(checkpoint), HFOptions(block_size=8))
    script_text(backend, "ok</think>\n\nI read the text.")
    seen: list[Any] = []
    stream = backend.stream

    def recording(request: Any) -> Any:
        seen.append(request)  # what the engine was asked to decode
        return stream(request)

    backend.stream = recording  # type: ignore[method-assign]
    values = {
        "engine": "hf",
        "model_path": str(checkpoint),
        "sessions_dir": tmp_path / "sessions",
        "repo_map_tokens": 0,
        "sandbox": "none",
        "models": {"big": {"id": "clover-35b"}},
    }
    settings = load_settings(values, user_config=tmp_path / "none.toml", env={})
    events: list[p.Event] = []
    options = SessionOptions(
        emit=events.append, approver=RefuseApprover(), backend=backend, approval_mode="auto-edit"
    )
    session = await open_session(settings, repo, options)
    try:
        listed, note = await session.models()
        assert [(o.name, o.current, o.served) for o in listed] == [
            (backend.model, True, True),
            ("big", False, False),
        ]
        assert note == "the hf engine runs only the checkpoint it loaded."
        await session.submit(p.SetModel(model="big"))
        [error] = [e.message for e in events if isinstance(e, p.ErrorEvent)]
        assert error.startswith(f"the hf engine runs only the checkpoint it loaded ({checkpoint})")
        assert "--model-path" in error
        assert not [e for e in events if isinstance(e, p.ModelChanged)]

        shot = p.ImageAttachment.of("image/png", b"\x89PNG\r\n\x1a\n" + bytes(16), "shot.png")
        finished = await session.run_turn(p.UserInput(text="describe", images=(shot,)))
    finally:
        await session.close()
    assert finished.status == "completed", events
    assert "I read the text." in finished.final_text
    left_out = [e.text for e in events if isinstance(e, p.Notice) and "image" in e.text]
    assert left_out == [
        f"the model {backend.model} takes no images (the hf engine is text-only), so the "
        "prompt went without shot.png; the image stays in the conversation for a model "
        "that takes images."
    ]
    assert seen[0].messages[-1] == {"role": "user", "content": f"describe\n\n{IMAGE_LEFT_OUT}"}
    assert load(session.transcript.path).messages[0]["content"][1]["type"] == "image_url"
