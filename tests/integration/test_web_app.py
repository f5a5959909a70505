"""``clover-code web`` in a real headless Chromium, driven over the DevTools protocol.

The page loads, a prompt typed into it reaches the scripted model, the
approval modal is answered with the keyboard, and the model's answer shows
on the page; a screenshot is kept under the test's tmp dir (its path is
printed). The access checks are tested with plain HTTP requests.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.integration.cdp import Chromium, chromium_path, screen_text
from tests.integration.sse_server import ScriptedServer, sse_response
from tests.integration.stream_shapes import SGLangStream
from tests.waiting import in_ci, within

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
ANSWER = "PONG-WEB-42"


def sglang(build: Any) -> Any:
    stream = SGLangStream()
    build(stream)
    return sse_response(stream.chunks())


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextlib.asynccontextmanager
async def _serve(repo: Path, home: Path, *args: str) -> AsyncIterator[tuple[int, str]]:
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("CLOVER_")}
    env.update(
        XDG_DATA_HOME=str(home / "data"),
        XDG_CONFIG_HOME=str(home / "config"),
        PYTHONPATH=os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep),
    )
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "clover_code",
        "web",
        "--port",
        str(port),
        *args,
        cwd=repo,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    assert proc.stderr is not None
    line = await within(proc.stderr.readline(), message="clover-code web to print its URL")
    banner = line.decode()
    while "open http" not in banner:
        line = await within(proc.stderr.readline(), message="the URL line")
        assert line, "clover-code web exited"
        banner += line.decode()
    url = banner.rsplit("open ", 1)[1].strip()

    async def drain() -> None:
        while await proc.stderr.read(65536):  # type: ignore[union-attr]
            pass

    drainer = asyncio.create_task(drain())
    try:
        async with httpx.AsyncClient(trust_env=False) as client:

            async def up() -> None:
                while True:
                    try:
                        await client.get(f"http://127.0.0.1:{port}/static/css/xterm.css")
                        return
                    except httpx.TransportError:
                        await asyncio.sleep(0.1)

            await within(up(), message="the web server to listen")
        yield port, url
    finally:
        proc.terminate()
        await within(proc.wait(), message="clover-code web to stop")
        drainer.cancel()


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    return root


async def _until(browser: Chromium, text: str, what: str) -> None:
    async def seen() -> None:
        while text not in screen_text(browser.events):
            await asyncio.sleep(0.1)

    await within(seen(), message=what)


async def test_prompt_approval_and_answer_in_a_browser(
    scripted_server: ScriptedServer, repo: Path, tmp_path: Path
) -> None:
    if chromium_path() is None:
        # CI installs it (scripts/install-system); there a missing browser is a failure.
        assert not in_ci(), "chromium is missing; scripts/install-system installs it"
        pytest.skip("chromium is not installed (scripts/install-system installs it)")
    scripted_server.enqueue(
        sglang(
            lambda s: s.tool_call("write_file", {"path": "note.txt", "content": "from the web\n"})
        ),
        sglang(lambda s: s.content(f"Wrote note.txt. {ANSWER}")),
    )
    async with _serve(
        repo, tmp_path, "--base-url", scripted_server.base_url, "--sandbox", "none"
    ) as (_port, url):
        browser = await Chromium.launch(tmp_path / "profile")
        try:
            await browser.call("Network.enable")
            await browser.call("Page.enable")
            await browser.call("Page.navigate", url=url)
            # The app's first frames: the composer is drawn.
            await _until(browser, "\u203a", "the app to draw its prompt in the page")

            async def typed() -> None:
                while True:
                    focused = await browser.call(
                        "Runtime.evaluate",
                        expression=(
                            "(() => { const t = document.querySelector("
                            "'.xterm-helper-textarea'); if (!t) return false; "
                            "t.focus(); return document.activeElement === t; })()"
                        ),
                        returnByValue=True,
                    )
                    if focused["result"].get("value") is True:
                        return
                    await asyncio.sleep(0.1)

            await within(typed(), message="the terminal to take focus")
            await browser.call("Input.insertText", text="write a note please")
            await _until(browser, "write a note please", "the prompt to echo in the app")
            await browser.press("Enter", text="\r", code=13)
            await _until(browser, "allow once", "the approval modal")
            shot_modal = await browser.screenshot(tmp_path / "web-approval.png")
            await browser.press("y", text="y", code=89)
            await _until(browser, ANSWER, "the model's answer on the page")
            shot = await browser.screenshot(tmp_path / "web-app.png")
            print(f"\nscreenshots: {shot_modal} {shot}")
            assert shot.stat().st_size > 1000
        finally:
            await browser.close()
    assert (repo / "note.txt").read_text() == "from the web\n"
    requests = scripted_server.chat_requests
    assert "write a note please" in str(requests[0].json()["messages"])
    assert requests[1].json()["messages"][-1]["role"] == "tool"


async def test_access_checks(scripted_server: ScriptedServer, repo: Path, tmp_path: Path) -> None:
    async with _serve(repo, tmp_path, "--base-url", scripted_server.base_url) as (port, url):
        assert url == f"http://127.0.0.1:{port}/"
        async with httpx.AsyncClient(trust_env=False) as client:
            base = f"http://127.0.0.1:{port}"
            assert (await client.get(base + "/")).status_code == 200
            rebound = await client.get(base + "/", headers={"Host": f"evil.example:{port}"})
            assert rebound.status_code == 403
            cross = await client.get(base + "/ws", headers={"Origin": "http://evil.example"})
            assert cross.status_code == 403


async def test_a_public_address_needs_the_token(
    scripted_server: ScriptedServer, repo: Path, tmp_path: Path
) -> None:
    async with _serve(
        repo, tmp_path, "--host", "0.0.0.0", "--base-url", scripted_server.base_url
    ) as (port, url):
        assert "?token=" in url
        token = url.split("?token=", 1)[1]
        base = f"http://127.0.0.1:{port}"
        async with httpx.AsyncClient(trust_env=False) as client:
            assert (await client.get(base + "/")).status_code == 403
            assert (await client.get(base + "/?token=wrong")).status_code == 403
            assert (await client.get(base + "/static/css/xterm.css")).status_code == 403
            page = await client.get(f"{base}/?token={token}")
            assert page.status_code == 200
            # The cookie the page set carries the token for its scripts and WebSocket.
            assert (await client.get(base + "/static/css/xterm.css")).status_code == 200
