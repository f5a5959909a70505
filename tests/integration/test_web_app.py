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
import signal
import socket
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any, NamedTuple
from urllib.parse import urlsplit

import aiohttp
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


class Served(NamedTuple):
    port: int
    url: str
    """The URL the server printed (with its token)."""
    proc: asyncio.subprocess.Process


@contextlib.asynccontextmanager
async def _serve(repo: Path, home: Path, *args: str) -> AsyncIterator[Served]:
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
                        await client.get(f"http://{urlsplit(url).netloc}/static/css/xterm.css")
                        return
                    except httpx.TransportError:
                        await asyncio.sleep(0.1)

            await within(up(), message="the web server to listen")
        yield Served(port, url, proc)
    finally:
        if proc.returncode is None:
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
    ) as served:
        url = served.url
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


def _tab_apps(marker: str) -> set[int]:
    """Live (not zombie) tab app processes whose command line holds ``marker``."""
    found = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        # The app itself (argv ``... -m clover_code.webapp.child``), not a shell around it.
        app = b"\0-m\0clover_code.webapp.child\0" in cmdline
        if app and marker.encode() in cmdline and state != "Z":
            found.add(int(entry.name))
    return found


async def _gone(marker: str, what: str) -> None:
    async def wait() -> None:
        while _tab_apps(marker):
            await asyncio.sleep(0.1)

    await within(wait(), message=what)


def _ws_url(url: str) -> str:
    token = url.split("?token=", 1)[1]
    return "ws://" + url.split("://", 1)[1].split("/", 1)[0] + f"/ws?token={token}"


def _curl_ws(port: int, query: str = "") -> str:
    """A WebSocket handshake to /ws with no Origin, by another local user where we
    can switch to one (uid 65534), else by this one; returns the response head."""
    command = [
        "curl", "-sS", "-i", "--max-time", "10", "--http1.1",
        "-H", "Connection: Upgrade", "-H", "Upgrade: websocket",
        "-H", "Sec-WebSocket-Version: 13", "-H", "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==",
        f"http://127.0.0.1:{port}/ws{query}",
    ]  # fmt: skip
    if os.geteuid() == 0:
        command = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", *command]
    done = subprocess.run(command, capture_output=True, text=True, check=False, cwd="/")
    return done.stdout.split("\r\n\r\n", 1)[0]


async def test_access_checks(scripted_server: ScriptedServer, repo: Path, tmp_path: Path) -> None:
    async with _serve(repo, tmp_path, "--base-url", scripted_server.base_url) as served:
        port, url = served.port, served.url
        assert url.startswith(f"http://127.0.0.1:{port}/?token=")
        token = url.split("?token=", 1)[1]
        assert len(token) >= 32
        # No token, no access, loopback included: not a page, not a WebSocket.
        head = _curl_ws(port)
        assert head.startswith("HTTP/1.1 403"), head
        assert _curl_ws(port, "?token=wrong").startswith("HTTP/1.1 403")
        async with httpx.AsyncClient(trust_env=False) as client:
            base = f"http://127.0.0.1:{port}"
            assert (await client.get(base + "/")).status_code == 403
            assert (await client.get(base + "/?token=wrong")).status_code == 403
            assert (await client.get(base + "/static/css/xterm.css")).status_code == 403
            rebound = await client.get(url, headers={"Host": f"evil.example:{port}"})
            assert rebound.status_code == 403
            cross = await client.get(
                f"{base}/ws?token={token}", headers={"Origin": "http://evil.example"}
            )
            assert cross.status_code == 403
            assert (await client.get(url)).status_code == 200
            # The cookie the page set carries the token for its scripts and WebSocket.
            assert (await client.get(base + "/static/css/xterm.css")).status_code == 200


async def test_a_public_address_needs_the_token_and_its_url_names_this_machine(
    scripted_server: ScriptedServer, repo: Path, tmp_path: Path
) -> None:
    async with _serve(
        repo, tmp_path, "--host", "0.0.0.0", "--base-url", scripted_server.base_url
    ) as served:
        port, url = served.port, served.url
        shown = str(urlsplit(url).hostname)
        # Not the wildcard: an address (or name) of this machine another one can use.
        assert shown not in ("0.0.0.0", "::", "127.0.0.1", "localhost"), url
        base = f"http://127.0.0.1:{port}"
        async with httpx.AsyncClient(trust_env=False) as client:
            assert (await client.get(base + "/")).status_code == 403
            assert (await client.get(base + "/?token=wrong")).status_code == 403
            assert (await client.get(url)).status_code == 200


async def test_the_printed_url_of_another_loopback_address_is_answered(
    scripted_server: ScriptedServer, repo: Path, tmp_path: Path
) -> None:
    async with _serve(
        repo, tmp_path, "--host", "127.0.0.2", "--base-url", scripted_server.base_url
    ) as served:
        assert served.url.startswith(f"http://127.0.0.2:{served.port}/?token=")
        async with httpx.AsyncClient(trust_env=False) as client:
            page = await client.get(served.url)
            assert page.status_code == 200, page.text
            other = await client.get(served.url, headers={"Host": f"127.0.0.3:{served.port}"})
            assert other.status_code == 403


async def test_a_tab_closed_while_its_app_starts_leaves_no_process(
    scripted_server: ScriptedServer, repo: Path, tmp_path: Path
) -> None:
    marker = scripted_server.base_url
    async with (
        _serve(repo, tmp_path, "--base-url", marker) as served,
        aiohttp.ClientSession() as client,
    ):
        websocket = await client.ws_connect(_ws_url(served.url))

        async def started() -> None:
            while not _tab_apps(marker):
                await asyncio.sleep(0.02)

        await within(started(), message="the tab's app process to start")
        await websocket.close()  # the app is still starting
        await _gone(marker, "the closed tab's app process to end")
        assert served.proc.returncode is None  # the server serves on


@pytest.mark.parametrize("stop", ["ctrl-c", "sigterm", "sigkill"])
async def test_stopping_the_server_ends_every_tab(
    stop: str, scripted_server: ScriptedServer, repo: Path, tmp_path: Path
) -> None:
    marker = scripted_server.base_url
    async with (
        _serve(repo, tmp_path, "--base-url", marker) as served,
        aiohttp.ClientSession() as client,
    ):
        tabs = [await client.ws_connect(_ws_url(served.url)) for _ in range(2)]
        for tab in tabs:  # each app has drawn its first frame
            await within(tab.receive(), message="the tab's app to draw")
        assert len(_tab_apps(marker)) == 2
        if stop == "ctrl-c":  # a terminal signals its whole foreground process group
            os.killpg(served.proc.pid, signal.SIGINT)
        else:  # SIGKILL: the server cannot act, the parent-death signal does
            served.proc.send_signal(signal.SIGTERM if stop == "sigterm" else signal.SIGKILL)
        await within(served.proc.wait(), message="the server to stop")
        await _gone(marker, f"every tab's app process to end after {stop}")
