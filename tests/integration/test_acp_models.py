"""ACP: the model as a session config option, and image blocks in a prompt.

A real ``clover-code acp`` subprocess over stdio, the harness's editor client and
a scripted model server that serves three models. The editor sees the models in
``configOptions``, switches with ``session/set_config_option`` (the next request
asks for the new model), and an image block reaches a model that takes images as
a content part; a text-only model gets the text and a warning says so.
"""

from __future__ import annotations

import base64
import subprocess
from pathlib import Path
from typing import Any

import pytest
from acp import RequestError, image_block, text_block

from tests.integration.sse_server import ScriptedServer, error_response
from tests.integration.test_acp import EDITOR_CAPS, EDITOR_INFO, sglang
from tests.integration.test_acp_harness import EditorClient, spawn_acp

pytestmark = pytest.mark.integration

PNG = b"\x89PNG\r\n\x1a\n" + bytes(48)
CONFIG = """\
[models.fast]
id = "qwen3-coder-30b"

[models.eyes]
id = "vl-model"
vision = true
context_window = 16384
"""


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    return root


@pytest.fixture
def server(scripted_server: ScriptedServer, tmp_path: Path) -> ScriptedServer:
    scripted_server.models = ["small-model", "qwen3-coder-30b", "vl-model"]
    config = tmp_path / "config" / "clover-code" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text(CONFIG)
    return scripted_server


def _model_option(options: Any) -> dict[str, Any]:
    [option] = [o.model_dump(by_alias=True, exclude_none=True) for o in options]
    return option


def _user_content(server: ScriptedServer, index: int) -> Any:
    messages = server.chat_requests[index].json()["messages"]
    return [m for m in messages if m["role"] == "user"][-1]["content"]


async def test_the_editor_switches_the_model_and_sends_an_image(
    server: ScriptedServer, repo: Path, tmp_path: Path
) -> None:
    server.enqueue(
        sglang(lambda s: s.content("A small answer.")),
        sglang(lambda s: s.content("A grey square.")),
    )
    client = EditorClient()
    args = ("--base-url", server.base_url, "--model", "small-model", "--sandbox", "none")
    async with spawn_acp(client, repo, tmp_path, *args) as (conn, _proc):
        init = await conn.initialize(
            protocol_version=1, client_capabilities=EDITOR_CAPS, client_info=EDITOR_INFO
        )
        assert init.agent_capabilities is not None
        assert init.agent_capabilities.prompt_capabilities is not None
        assert init.agent_capabilities.prompt_capabilities.image
        new = await conn.new_session(cwd=str(repo), mcp_servers=[])
        sid = new.session_id
        option = _model_option(new.config_options)
        assert (option["id"], option["category"], option["currentValue"]) == (
            "model",
            "model",
            "small-model",
        )
        assert [o["value"] for o in option["options"]] == ["small-model", "fast", "eyes"]

        await conn.prompt(session_id=sid, prompt=[text_block("hello")])
        switched = await conn.set_config_option(config_id="model", session_id=sid, value="eyes")
        assert _model_option(switched.config_options)["currentValue"] == "eyes"
        data = base64.b64encode(PNG).decode()
        image = image_block(data, "image/png", uri=f"file://{repo}/shot.png")
        done = await conn.prompt(session_id=sid, prompt=[text_block("what is this?"), image])
        assert done.stop_reason == "end_turn"

        with pytest.raises(RequestError) as unknown:
            await conn.set_config_option(config_id="model", session_id=sid, value="nope")
        with pytest.raises(RequestError) as other:
            await conn.set_config_option(config_id="colour", session_id=sid, value="red")
    assert [r.json()["model"] for r in server.chat_requests] == ["small-model", "vl-model"]
    assert _user_content(server, 1) == [
        {"type": "text", "text": "what is this?"},
        {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{data}"}},
    ]
    assert "does not serve the model 'nope'" in str(unknown.value.data or unknown.value)
    assert "the session stays on 'vl-model'" in str(unknown.value.data or unknown.value)
    assert "no config option 'colour'" in str(other.value.data or other.value)


async def test_a_model_whose_server_refuses_images_gets_the_text_and_a_warning(
    server: ScriptedServer, repo: Path, tmp_path: Path
) -> None:
    server.enqueue(
        error_response(400, "Invalid request: this model does not support images"),
        sglang(lambda s: s.content("I only read the text.")),
    )
    client = EditorClient()
    args = ("--base-url", server.base_url, "--model", "fast", "--sandbox", "none")
    async with spawn_acp(client, repo, tmp_path, *args) as (conn, _proc):
        await conn.initialize(
            protocol_version=1, client_capabilities=EDITOR_CAPS, client_info=EDITOR_INFO
        )
        new = await conn.new_session(cwd=str(repo), mcp_servers=[])
        assert _model_option(new.config_options)["currentValue"] == "fast"
        image = image_block(base64.b64encode(PNG).decode(), "image/png")
        done = await conn.prompt(session_id=new.session_id, prompt=[text_block("look"), image])
    assert done.stop_reason == "end_turn"
    refused, retried = server.chat_requests
    assert refused.json()["model"] == retried.json()["model"] == "qwen3-coder-30b"
    assert _user_content(server, 0)[1]["type"] == "image_url"
    assert isinstance(_user_content(server, 1), str)
    text = client.message_text()
    assert "**Warning:**" in text and "refused the images for the model 'qwen3-coder-30b'" in text
    assert "I only read the text." in text
