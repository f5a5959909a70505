"""A small Chrome DevTools Protocol client for driving headless Chromium in tests.

``Chromium.launch`` starts Debian's ``chromium`` headless with a throwaway
profile and connects to its first page over the DevTools WebSocket (the
``websockets`` package); ``call`` sends a command and waits for its answer,
and every event is kept in ``events`` for the test to look through.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import httpx
import websockets

__all__ = ["Chromium", "chromium_path", "screen_text"]

_LISTENING = re.compile(r"DevTools listening on (ws://\S+)")
_ANSI = re.compile(r"\x1b(\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(\x07|\x1b\\)|[PX^_][^\x1b]*\x1b\\|.)")


def chromium_path() -> str | None:
    """Where Chromium is installed, or None."""
    return shutil.which("chromium") or shutil.which("chromium-browser")


def screen_text(events: list[dict[str, Any]]) -> str:
    """Everything the page's WebSockets received, as text without escape codes."""
    parts: list[str] = []
    for event in events:
        if event.get("method") != "Network.webSocketFrameReceived":
            continue
        frame = event["params"]["response"]
        data = frame["payloadData"]
        if frame.get("opcode") == 2:
            data = base64.b64decode(data).decode("utf-8", errors="ignore")
        parts.append(data)
    return _ANSI.sub("", "".join(parts))


class Chromium:
    """One headless Chromium and a DevTools session on its page."""

    def __init__(self, proc: subprocess.Popen[bytes], ws: Any) -> None:
        self.proc = proc
        self.ws = ws
        self.events: list[dict[str, Any]] = []
        self._next = 0
        self._waiting: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self._reader = asyncio.create_task(self._read())

    @classmethod
    async def launch(cls, profile: Path, width: int = 1280, height: int = 800) -> Chromium:
        """Start Chromium (``--headless --no-sandbox --disable-gpu``...) and attach to its page."""
        binary = chromium_path()
        assert binary is not None, "chromium is not installed (scripts/install-system)"
        proc = subprocess.Popen(
            [
                binary,
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-background-networking",
                "--disable-component-update",
                "--no-first-run",
                "--no-default-browser-check",
                f"--user-data-dir={profile}",
                f"--window-size={width},{height}",
                "--remote-debugging-port=0",
                "about:blank",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        assert proc.stderr is not None
        loop = asyncio.get_running_loop()
        endpoint = None
        async with asyncio.timeout(60):
            while endpoint is None:
                line = (await loop.run_in_executor(None, proc.stderr.readline)).decode()
                if not line and proc.poll() is not None:
                    raise AssertionError(f"chromium exited with {proc.returncode}")
                found = _LISTENING.search(line)
                endpoint = found.group(1) if found else None
        port = endpoint.split("//", 1)[1].split("/", 1)[0]
        async with httpx.AsyncClient(trust_env=False) as client:
            targets = (await client.get(f"http://{port}/json/list")).json()
        page = next(t for t in targets if t.get("type") == "page")
        ws = await websockets.connect(page["webSocketDebuggerUrl"], max_size=None)
        # Let stderr drain so Chromium never blocks writing to it.
        loop.run_in_executor(None, proc.stderr.read)
        return cls(proc, ws)

    async def _read(self) -> None:
        with contextlib.suppress(websockets.ConnectionClosed):
            async for raw in self.ws:
                message = json.loads(raw)
                waiter = self._waiting.pop(message.get("id", -1), None)
                if waiter is not None and not waiter.done():
                    waiter.set_result(message)
                elif "method" in message:
                    self.events.append(message)

    async def call(self, method: str, **params: Any) -> dict[str, Any]:
        """Send one command; its ``result`` (an error raises)."""
        self._next += 1
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._waiting[self._next] = future
        await self.ws.send(json.dumps({"id": self._next, "method": method, "params": params}))
        async with asyncio.timeout(60):
            answer = await future
        if "error" in answer:
            raise AssertionError(f"{method}: {answer['error']}")
        result: dict[str, Any] = answer.get("result", {})
        return result

    async def press(self, key: str, text: str | None = None, code: int = 0) -> None:
        """A key press as the keyboard would make it (keyDown with text, then keyUp)."""
        down: dict[str, Any] = {"type": "keyDown", "key": key}
        if text is not None:
            down["text"] = text
        if code:
            down["windowsVirtualKeyCode"] = code
            down["nativeVirtualKeyCode"] = code
        await self.call("Input.dispatchKeyEvent", **down)
        await self.call("Input.dispatchKeyEvent", type="keyUp", key=key)

    async def screenshot(self, path: Path) -> Path:
        """Save a PNG of the page."""
        shot = await self.call("Page.captureScreenshot", format="png")
        path.write_bytes(base64.b64decode(shot["data"]))
        return path

    async def close(self) -> None:
        """Close the connection and end Chromium."""
        with contextlib.suppress(Exception):
            await self.ws.close()
        self._reader.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._reader
        self.proc.terminate()
        try:
            await asyncio.to_thread(self.proc.wait, 10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
