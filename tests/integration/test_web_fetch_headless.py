"""web_fetch through the real `clover-code --task`: headless refuses a fetch no
rule allows (it cannot ask), and a domain allow rule lets it run, with the
page reaching the model framed as untrusted."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from clover_code import protocol as p
from clover_code.outcome.result import TaskResult, parse_stream_line
from tests.integration.sse_server import ScriptedServer, sse_response
from tests.integration.stream_shapes import SGLangStream
from tests.integration.test_headless_e2e import run_clover
from tests.integration.web_pages import INJECTION, PageServer

pytestmark = pytest.mark.integration


def sglang(build: Any) -> Any:
    stream = SGLangStream()
    build(stream)
    return sse_response(stream.chunks())


@pytest.fixture
def pages() -> Iterator[PageServer]:
    server = PageServer("127.0.0.1", "docs")
    yield server
    server.close()


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    return root


async def _fetch_task(
    scripted_server: ScriptedServer, repo: Path, home: Path, url: str, env: dict[str, str]
) -> tuple[list[Any], TaskResult]:
    scripted_server.enqueue(
        sglang(lambda s: s.tool_call("web_fetch", {"url": url, "prompt": "install steps"})),
        sglang(lambda s: s.content("Done reading.")),
    )
    code, out, err = await run_clover(
        repo,
        "--task",
        "read the docs",
        "--base-url",
        scripted_server.base_url,
        "--sandbox",
        "none",
        "--output-format",
        "stream-json",
        home=home,
        extra_env={"CLOVER_WEB_ALLOW_PRIVATE": "true", **env},
    )
    assert code == 0, err
    *events, result = [parse_stream_line(line) for line in out.splitlines()]
    assert isinstance(result, TaskResult)
    return events, result


async def test_headless_refuses_a_fetch_no_rule_allows(
    scripted_server: ScriptedServer, repo: Path, tmp_path: Path, pages: PageServer
) -> None:
    events, _ = await _fetch_task(scripted_server, repo, tmp_path, pages.url("/page"), {})
    finished = [e for e in events if isinstance(e, p.ToolCallFinished)]
    assert [(f.name, f.status) for f in finished] == [("web_fetch", "denied")]
    assert pages.hits == []  # nothing left the machine
    told = scripted_server.chat_requests[1].json()["messages"][-1]["content"]
    assert "[permissions.allow] web_fetch" in told


async def test_an_allow_rule_lets_the_fetch_run_framed_as_untrusted(
    scripted_server: ScriptedServer, repo: Path, tmp_path: Path, pages: PageServer
) -> None:
    rules = '{"allow": {"web_fetch": ["127.0.0.1"]}}'
    events, result = await _fetch_task(
        scripted_server,
        repo,
        tmp_path,
        pages.url("/page"),
        {"CLOVER_PERMISSIONS": rules},
    )
    assert result.status == "success"
    finished = [e for e in events if isinstance(e, p.ToolCallFinished)]
    assert [(f.name, f.status) for f in finished] == [("web_fetch", "ok")]
    seen = scripted_server.chat_requests[1].json()["messages"][-1]["content"]
    assert "# Install" in seen and INJECTION in seen
    assert seen.index("<untrusted-content") < seen.index(INJECTION)
    assert "Looking for: install steps" in seen
