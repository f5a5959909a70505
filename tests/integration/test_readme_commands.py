"""The README's runnable shell blocks, run as written on this machine.

A block marked ``<!-- readme-test: NAME -->`` on the line before its fence is
extracted from README.md (and every page under docs/) and run with bash, line
by line as a user would type it. What a test machine has instead of the
user's is substituted, and only that: the model server's URL (a scripted
loopback server), the values of the ``MODEL=``, ``MODEL_DIR=`` and ``PORT=``
lines (the small GGUF model the tests already use, a tiny checkpoint of Clover's
architecture family, a free port), the fixed ports of the ``web`` and ``serve``
blocks (free ones), and ``your-project`` / ``./clover-code`` as folders of a
scratch directory. ``pip`` is a virtual
environment's over the installed dependencies, so installing touches nothing
outside it.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import pty
import re
import shlex
import signal
import subprocess
import sys
import termios
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path

import httpx
import pytest

from tests.integration.llama_peer import PeerMissing, free_port, gemma_model_path
from tests.integration.sse_server import (
    CHAT_PATH,
    MODELS_PATH,
    RecordedRequest,
    ScriptedServer,
    error_response,
    json_response,
    sse_response,
)
from tests.integration.stream_shapes import SGLangStream
from tests.waiting import within

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
MARK = re.compile(r"<!-- readme-test: ([\w-]+) -->\n```(?:sh|bash)\n(.*?)```", re.DOTALL)


def marked_blocks() -> dict[str, tuple[Path, str]]:
    """Every marked block of README.md and docs/, by name."""
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("**/*.md"))]
    found: dict[str, tuple[Path, str]] = {}
    for page in pages:
        for name, body in MARK.findall(page.read_text("utf-8")):
            assert name not in found, f"two README blocks are named {name}"
            found[name] = (page, body)
    return found


def test_the_runnable_blocks_are_all_tested() -> None:
    assert set(marked_blocks()) == {"quickstart", "llama", "sandbox", "web", "serve", "acp"}


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A virtual environment over the installed packages, for `pip install` to go into."""
    where = tmp_path_factory.mktemp("readme-venv") / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(where)], check=True)
    return where / "bin"


def environment(venv: Path, home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CLOVER_")}
    env.update(
        PATH=f"{venv}:{env.get('PATH', '')}",
        VIRTUAL_ENV=str(venv.parent),
        XDG_DATA_HOME=str(home / "data"),
        XDG_CONFIG_HOME=str(home / "config"),
        PIP_DISABLE_PIP_VERSION_CHECK="1",
    )
    env.pop("PYTHONPATH", None)
    return env


def failing_project(where: Path) -> Path:
    project = where / "your-project"
    project.mkdir()
    (project / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    (project / "test_calc.py").write_text(
        "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"
    )
    subprocess.run(["git", "init", "-q"], cwd=project, check=True)
    return project


def fixer(request: RecordedRequest) -> object:
    """The scripted model: the doctor's probe gets a tool call; the agent runs the
    tests, fixes ``add``, runs them again and says so."""
    if request.path == MODELS_PATH:
        return json_response({"object": "list", "data": [{"id": "clover", "object": "model"}]})
    if request.path != CHAT_PATH:  # the doctor's /props: not a llama.cpp server
        return error_response(404, "no such endpoint")
    body = request.json()
    if not body.get("stream"):
        call = {"id": "p", "type": "function", "function": {"name": "ping", "arguments": "{}"}}
        message = {"role": "assistant", "content": None, "tool_calls": [call]}
        return json_response({"choices": [{"index": 0, "message": message}]})
    tools_ran = sum(1 for m in body["messages"] if m.get("role") == "tool")
    stream = SGLangStream()
    if tools_ran == 0:
        stream.tool_call("shell", {"command": "python3 -m pytest -q"})
    elif tools_ran == 1:
        stream.tool_call(
            "edit_file",
            {"path": "calc.py", "old_string": "return a - b", "new_string": "return a + b"},
        )
    elif tools_ran == 2:
        stream.tool_call("shell", {"command": "python3 -m pytest -q"})
    else:
        stream.content("Fixed add: it subtracted; the test passes now.")
    return sse_response(stream.chunks())


async def run_block(body: str, cwd: Path, env: dict[str, str]) -> tuple[int, str]:
    """Run ``body`` to its end; what it left running in the background (a server) is
    stopped after it."""
    async with running_block(body, cwd, env) as (proc, log):
        await within(proc.wait(), timeout=800, message="the README block")
    assert proc.returncode is not None
    return proc.returncode, log.read_text(errors="replace")


async def run_in_terminal(body: str, cwd: Path, env: dict[str, str]) -> tuple[int, str]:
    """Run ``body`` with its output on a terminal (a pty), as a user typing it sees it."""
    master, slave = pty.openpty()
    attrs = termios.tcgetattr(slave)
    attrs[1] &= ~termios.ONLCR  # keep the program's own line endings
    termios.tcsetattr(slave, termios.TCSANOW, attrs)
    proc = await asyncio.create_subprocess_exec(
        "bash",
        "-e",
        "-c",
        body,
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=slave,
        stderr=slave,
        start_new_session=True,
    )
    os.close(slave)
    chunks: list[bytes] = []
    loop = asyncio.get_running_loop()

    def read() -> None:
        while True:
            try:
                data = os.read(master, 65536)
            except OSError:  # EIO: every writer has closed the terminal
                return
            if not data:
                return
            chunks.append(data)

    try:
        await within(
            asyncio.gather(proc.wait(), loop.run_in_executor(None, read)),
            timeout=120,
            message="the README block",
        )
    finally:
        os.close(master)
        with_group(proc.pid, signal.SIGKILL)
    assert proc.returncode is not None
    return proc.returncode, b"".join(chunks).decode(errors="replace")


def with_group(pgid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pgid, sig)


async def test_quick_start_fixes_a_failing_test(
    scripted_server: ScriptedServer, venv: Path, tmp_path: Path
) -> None:
    scripted_server.responder = fixer  # type: ignore[assignment]
    _, body = marked_blocks()["quickstart"]
    body = body.replace("http://localhost:30000/v1", scripted_server.base_url)
    (tmp_path / "clover-code").symlink_to(ROOT)
    project = failing_project(tmp_path)
    code, out = await run_block(body, tmp_path, environment(venv, tmp_path))
    assert code == 0, out
    assert (project / "calc.py").read_text() == "def add(a, b):\n    return a + b\n"
    assert "Fixed add" in out
    installed = (venv / "clover-code").resolve()
    assert installed.is_file() and installed.parent == venv


def llama_block(body: str, model: Path, port: int) -> str:
    body = re.sub(r"^MODEL=.*$", f"MODEL={model}", body, count=1, flags=re.MULTILINE)
    return re.sub(r"^PORT=.*$", f"PORT={port}", body, count=1, flags=re.MULTILINE)


@pytest.fixture
def gemma() -> Iterator[Path]:
    try:
        yield gemma_model_path()
    except PeerMissing as exc:
        pytest.skip(str(exc))


def peak_rss_mb(pid_file: Path) -> float:
    return float(pid_file.read_text() or 0) / 1024


@pytest.mark.timeout(900)
async def test_the_llama_cpp_path_starts_within_memory_and_answers(
    gemma: Path, venv: Path, tmp_path: Path
) -> None:
    _, body = marked_blocks()["llama"]
    port = free_port()
    body = llama_block(body, gemma, port)
    # Record the server's peak memory (VmHWM) just before the task's line ends.
    lines = body.rstrip("\n").split("\n")
    watch = (
        f"grep VmHWM /proc/$(pgrep -f 'llama_cpp.server.*--port {port}' | head -1)/status "
        f"| awk '{{print $2}}' > {tmp_path / 'peak'}"
    )
    script = "\n".join([f"trap {shlex.quote(watch)} EXIT", *lines])
    project = failing_project(tmp_path)
    # A 270M model on two CPU cores: one short answer is enough to show the path
    # works (the block itself is run unchanged; these are the user's own knobs).
    env = {
        **environment(venv, tmp_path),
        "OMP_WAIT_POLICY": "PASSIVE",
        "CLOVER_MAX_TOKENS": "32",
        "CLOVER_MAX_TURNS": "1",
    }
    code, out = await run_block(script, project, env)
    # The model answered (exit 4: the one request allowed was used; a 270M model
    # is not expected to fix the test).
    assert code in (0, 1, 4), out
    assert "cannot reach" not in out and "Traceback" not in out, out
    peak = peak_rss_mb(tmp_path / "peak")
    assert 0 < peak < 4096, f"llama_cpp.server peaked at {peak:.0f} MB"


@contextlib.asynccontextmanager
async def running_block(
    body: str, cwd: Path, env: dict[str, str]
) -> AsyncIterator[tuple[asyncio.subprocess.Process, Path]]:
    """A block started with bash, handed over, then stopped with whatever it started.

    Its output goes to a file beside ``cwd``: a server the block starts in the
    background would keep a pipe open after the block ends."""
    log = cwd.parent / f"block-{os.getpid()}-{id(body)}.log"
    with log.open("wb") as sink:
        proc = await asyncio.create_subprocess_exec(
            "bash",
            "-e",
            "-c",
            body,
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=sink,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        yield proc, log
    finally:
        with_group(proc.pid, signal.SIGTERM)
        try:
            await asyncio.wait_for(proc.wait(), 15)
        except TimeoutError:
            with_group(proc.pid, signal.SIGKILL)
            await proc.wait()


async def poll(check: Callable[[], Awaitable[bool]], what: str, seconds: float = 180) -> None:
    deadline = time.monotonic() + seconds
    while not await check():
        if time.monotonic() > deadline:
            raise AssertionError(f"waited {seconds:g} s for {what}")
        await asyncio.sleep(0.3)


async def test_sandbox_build_and_status_run_as_written(venv: Path, tmp_path: Path) -> None:
    _, body = marked_blocks()["sandbox"]
    project = failing_project(tmp_path)
    code, out = await run_block(body, project, environment(venv, tmp_path))
    assert code == 0, out
    assert "clover-code-sandbox:" in out and "--sandbox auto" in out, out


async def test_acp_answers_initialize(
    scripted_server: ScriptedServer, venv: Path, tmp_path: Path
) -> None:
    _, body = marked_blocks()["acp"]
    body = body.replace("http://localhost:30000/v1", scripted_server.base_url)
    project = failing_project(tmp_path)
    code, out = await run_in_terminal(body, project, environment(venv, tmp_path))
    assert code == 0, out
    answer = json.loads(next(line for line in out.splitlines() if line.startswith("{")))
    assert answer["id"] == 0 and answer["result"]["protocolVersion"] == 1, out


async def test_web_serves_the_printed_url(
    scripted_server: ScriptedServer, venv: Path, tmp_path: Path
) -> None:
    _, body = marked_blocks()["web"]
    port = free_port()
    body = body.replace("--port 8000", f"--port {port}")
    body = body.replace("http://localhost:30000/v1", scripted_server.base_url)
    project = failing_project(tmp_path)
    async with running_block(body, project, environment(venv, tmp_path)) as (_, log):
        printed: list[str] = []

        async def url_printed() -> bool:
            printed[:] = re.findall(r"open (http://\S+)", log.read_text(errors="replace"))
            return bool(printed)

        await poll(url_printed, "the web front end to print its URL")
        async with httpx.AsyncClient() as client:
            page = await client.get(printed[0])
            assert page.status_code == 200
        async with httpx.AsyncClient() as stranger:  # no token and no cookie: no page
            assert (await stranger.get(printed[0].split("?")[0])).status_code == 403


async def test_serve_answers_with_its_key(venv: Path, tmp_path: Path) -> None:
    from tests.tiny_model import build_tiny_checkpoint

    _, body = marked_blocks()["serve"]
    checkpoint = tmp_path / "my-checkpoint"
    build_tiny_checkpoint(checkpoint)
    port = free_port()
    body = re.sub(r"^MODEL_DIR=.*$", f"MODEL_DIR={checkpoint}", body, flags=re.MULTILINE)
    body = body.replace("--port 8001", f"--port {port}")
    project = failing_project(tmp_path)
    async with running_block(body, project, environment(venv, tmp_path)):
        url = f"http://127.0.0.1:{port}/v1/models"
        async with httpx.AsyncClient() as client:

            async def answers() -> bool:
                try:
                    got = await client.get(url, headers={"Authorization": "Bearer local-key"})
                except httpx.HTTPError:
                    return False
                return got.status_code == 200

            await poll(answers, "clover-code serve to answer")
            assert (await client.get(url)).status_code == 401
