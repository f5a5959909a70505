"""End to end: ``--image`` on the real ``clover-code`` command against the scripted server."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest

from clover_code.outcome.result import TaskResult
from tests.integration.sse_server import ScriptedServer, sse_response
from tests.integration.stream_shapes import SGLangStream
from tests.integration.test_headless_e2e import repo, run_clover  # noqa: F401

pytestmark = pytest.mark.integration

PNG = b"\x89PNG\r\n\x1a\n" + bytes(32)
JPEG = b"\xff\xd8\xff\xe0" + bytes(32)


def _user_config(home: Path, text: str) -> None:
    path = home / "config" / "clover-code" / "config.toml"
    path.parent.mkdir(parents=True)
    path.write_text(text)


async def test_images_go_with_the_task_as_content_parts(
    repo: Path,  # noqa: F811
    scripted_server: ScriptedServer,
    headless_argv: tuple[str, ...],
    tmp_path: Path,
) -> None:
    (repo / "shot.png").write_bytes(PNG)
    (tmp_path / "photo.jpg").write_bytes(JPEG)  # outside the repository: named on purpose
    _user_config(tmp_path, '[models."test-model"]\nvision = true\n')
    scripted_server.enqueue(sse_response(SGLangStream().content("Two pictures.").chunks()))
    code, out, err = await run_clover(
        repo,
        "--task",
        "compare them",
        "--image",
        "shot.png",
        "--image",
        str(tmp_path / "photo.jpg"),
        "--output-format",
        "json",
        *headless_argv,
        home=tmp_path,
    )
    assert code == 0, err
    assert TaskResult.model_validate_json(out).result == "Two pictures."
    [request] = scripted_server.chat_requests
    content = request.json()["messages"][-1]["content"]
    assert [part["type"] for part in content] == ["text", "image_url", "image_url"]
    assert content[0]["text"] == "compare them"
    urls = [part["image_url"]["url"] for part in content[1:]]
    assert urls == [
        "data:image/png;base64," + base64.b64encode(PNG).decode(),
        "data:image/jpeg;base64," + base64.b64encode(JPEG).decode(),
    ]


async def test_a_text_only_model_gets_the_text_and_a_warning_says_so(
    repo: Path,  # noqa: F811
    scripted_server: ScriptedServer,
    headless_argv: tuple[str, ...],
    tmp_path: Path,
) -> None:
    (repo / "shot.png").write_bytes(PNG)
    _user_config(tmp_path, '[models."test-model"]\nvision = false\n')
    scripted_server.enqueue(sse_response(SGLangStream().content("Text only.").chunks()))
    code, out, err = await run_clover(
        repo, "--task", "look", "--image", "shot.png", *headless_argv, home=tmp_path
    )
    assert code == 0, err
    assert out.strip() == "Text only."
    assert "takes no images (its [models] entry says vision = false)" in err
    sent = json.dumps(scripted_server.chat_requests[0].json()["messages"])
    assert "image_url" not in sent and "this model takes no images" in sent


@pytest.mark.parametrize(
    ("name", "content", "said"),
    [
        ("notes.png", b"just text", "notes.png is not a PNG, JPEG, GIF or WebP image"),
        ("missing.png", None, "the image missing.png does not exist"),
    ],
)
async def test_an_image_that_cannot_be_attached_is_one_sentence_and_exit_2(
    repo: Path,  # noqa: F811
    scripted_server: ScriptedServer,
    headless_argv: tuple[str, ...],
    tmp_path: Path,
    name: str,
    content: bytes | None,
    said: str,
) -> None:
    if content is not None:
        (repo / name).write_bytes(content)
    code, out, err = await run_clover(
        repo, "--task", "look", "--image", name, *headless_argv, home=tmp_path
    )
    assert code == 2, err
    assert out == "" and "Traceback" not in err
    assert said in err and len(err.strip().splitlines()) == 1
    assert scripted_server.chat_requests == []
