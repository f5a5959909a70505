"""Watch mode end to end: real file events (watchfiles), a scripted SSE model server.

A comment ending in ``AI!`` is written into a file of a temporary repo; the
agent's edit must land and the marker be removed. Then an ``AI?`` question
in another file gets answered on stdout and its marker removed too.
"""

from __future__ import annotations

import asyncio
import io
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from clover_code.config.load import load_settings
from clover_code.watch import watch
from tests.integration.sse_server import ScriptedResponse, ScriptedServer, sse_response
from tests.integration.stream_shapes import SGLangStream
from tests.waiting import async_wait_until, within

pytestmark = pytest.mark.integration


def sglang(build: Callable[[SGLangStream], Any]) -> ScriptedResponse:
    stream = SGLangStream()
    build(stream)
    return sse_response(stream.chunks())


async def test_ai_comments_are_acted_on_and_removed(
    scripted_server: ScriptedServer, tmp_path: Path
) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    fix = {"path": "calc.py", "old_string": "return a - b", "new_string": "return a + b"}
    scripted_server.enqueue(
        sglang(lambda s: s.tool_call("edit_file", fix)),
        sglang(lambda s: s.content("Fixed add: it adds now.")),
        sglang(lambda s: s.content("It returns the sum of its arguments.")),
    )
    settings = load_settings(
        {
            "base_url": scripted_server.base_url,
            "sandbox": "none",
            "sessions_dir": tmp_path / "sessions",
        },
        user_config=tmp_path / "no-user-config.toml",
        env={},
    )
    out, err = io.StringIO(), io.StringIO()
    stop, ready = asyncio.Event(), asyncio.Event()
    task = asyncio.create_task(
        watch(settings, repo, out=out, err=err, stop=stop, ready=ready.set, debounce_ms=100)
    )
    try:
        await within(ready.wait(), message="the watcher to be ready")
        calc = repo / "calc.py"
        calc.write_text(
            "def add(a, b):\n    # this should add, not subtract AI!\n    return a - b\n"
        )
        # The answer is printed after the edit: wait for both.
        await async_wait_until(
            lambda: (
                calc.read_text() == "def add(a, b):\n    return a + b\n"
                and "Fixed add: it adds now." in out.getvalue()
            ),
            message="the fix and its answer",
        )

        notes = repo / "notes.py"
        notes.write_text("from calc import add\n\nprint(add(1, 2))  # what does add return AI?\n")
        await async_wait_until(
            lambda: (
                "AI?" not in notes.read_text()
                and "It returns the sum of its arguments." in out.getvalue()
            ),
            message="the question's comment removed and its answer",
        )
        assert notes.read_text() == "from calc import add\n\nprint(add(1, 2))\n"
    finally:
        stop.set()
        code = await within(task, message="the watcher to stop")
    assert code == 0, err.getvalue()

    first = scripted_server.chat_requests[0].json()["messages"][-1]["content"]
    assert "this should add, not subtract" in first
    assert "     3\t    return a - b" in first  # the surrounding code, numbered
    question = scripted_server.chat_requests[2].json()["messages"][-1]["content"]
    assert "what does add return" in question and "Do not edit any file." in question
    assert "Doing calc.py:2" in err.getvalue() and "Answering notes.py:3" in err.getvalue()
