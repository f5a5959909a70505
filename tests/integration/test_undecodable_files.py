"""Files whose names and contents are not UTF-8, made by the agent's shell, end to end.

A shell command can make any bytes; git and the file tools hand them on as
surrogate escapes, which JSON cannot carry. The end of the run used to crash
(``PydanticSerializationError``: no result on stdout, and through the GitHub
bot the traceback became the pull request's summary). Now the patch and the
paths escape each such byte as ``\\xNN``, and the file tools that list, read
and search them still answer. Through headless json and stream-json, ACP and
the GitHub bot.
"""

from __future__ import annotations

import json
import shlex
import subprocess
from pathlib import Path

import pytest
from acp import text_block

from tests.integration import test_github
from tests.integration.github_api_server import FakeGitHub
from tests.integration.sse_server import ScriptedServer, sse_response
from tests.integration.stream_shapes import SGLangStream
from tests.integration.test_acp_harness import EditorClient, spawn_acp
from tests.integration.test_github import REPOSITORY, Act
from tests.integration.test_headless_e2e import run_clover

pytestmark = pytest.mark.integration

# The GitHub bot's fixtures: a fake GitHub, a bare remote, the job's checkout.
github = test_github.github
remote = test_github.remote
checkout = test_github.checkout
act = test_github.act

# Names and contents no UTF-8 decoder accepts: a lone high byte, a truncated
# sequence, an encoded surrogate, an overlong form, and control characters.
FILES: dict[bytes, bytes] = {
    b"n\xffm.txt": b"a\xffb\n",
    b"cut\xc3.txt": b"tail \xc3\n",
    b"sur\xed\xa0\x80.txt": b"\xed\xa0\x80 surrogate\n",
    b"over\xc0\xaf.txt": b"\xc0\xaf overlong\n",
    b"tab\tand\nnewline.txt": b"\x00\x01 binary \xfe\xff\n",
}
MAKE_FILES = "python3 -c " + shlex.quote(
    f"for name, data in {FILES!r}.items(): open(name, 'wb').write(data)\n"
    "open('calc.py', 'ab').write(b'# caf\\xe9 \\xff\\n')\n"
)
# What the tools that read the workspace are then asked to do with those files.
LOOK_AROUND = [
    ("list_files", {"path": "."}),
    ("glob", {"pattern": "*.txt"}),
    ("grep", {"pattern": "a"}),
    ("repo_map", {}),
    ("read_file", {"path": "calc.py"}),
    ("shell", {"command": "ls; cat *.txt"}),
]


READ_REFUSAL = "error: 'calc.py' is a binary file (41 bytes); read_file shows text files only"


def _repo(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    _commit(repo)
    return repo


def _commit(repo: Path) -> None:
    ident = ("-c", "user.email=t@example.com", "-c", "user.name=t")
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    subprocess.run(["git", *ident, "add", "."], cwd=repo, check=True)
    subprocess.run(["git", *ident, "commit", "-qm", "start"], cwd=repo, check=True)


def _script(server: ScriptedServer, answer: str) -> None:
    stream = SGLangStream()
    stream.tool_call("shell", {"command": MAKE_FILES})
    server.enqueue(sse_response(stream.chunks()))
    for tool, arguments in LOOK_AROUND:
        stream = SGLangStream()
        stream.tool_call(tool, arguments)
        server.enqueue(sse_response(stream.chunks()))
    server.enqueue(sse_response(SGLangStream().content(answer).chunks()))


def _headless(headless_argv: tuple[str, ...], fmt: str) -> list[str]:
    return ["--task", "make files", "--output-format", fmt, *headless_argv]


def _check_result(result: dict[str, object]) -> None:
    assert result["status"] == "success", result
    print(result)
    assert result["result"] == "Made them."
    files = result["files_changed"]
    assert isinstance(files, list)
    assert "n\\xffm.txt" in files and "cut\\xc3.txt" in files
    assert "sur\\xed\\xa0\\x80.txt" in files and "over\\xc0\\xaf.txt" in files
    assert "tab\tand\nnewline.txt" in files and "calc.py" in files
    patch = result["patch"]
    assert isinstance(patch, str)
    assert "+a\\xffb" in patch and "+# caf\\xe9 \\xff" in patch
    assert "Binary files" in patch  # the NUL-bearing file


@pytest.mark.parametrize("fmt", ["json", "stream-json"])
async def test_headless_result_escapes_the_bytes(
    scripted_server: ScriptedServer, tmp_path: Path, fmt: str, headless_argv: tuple[str, ...]
) -> None:
    repo = _repo(tmp_path)
    _script(scripted_server, "Made them.")
    args = _headless(headless_argv, fmt)
    code, out, err = await run_clover(repo, *args, home=tmp_path / "home")
    assert code == 0, err[-3000:]
    assert "Traceback" not in err
    lines = [json.loads(line) for line in out.splitlines()]
    if fmt == "json":
        assert len(lines) == 1
    else:
        finished = [e for e in lines if e["type"] == "tool_call_finished"]
        statuses = {e["name"]: (e["status"], e["result"]) for e in finished}
        assert len(finished) == 1 + len(LOOK_AROUND)
        # read_file shows text files only: one that is not UTF-8 is refused, in a sentence.
        assert statuses.pop("read_file") == ("error", READ_REFUSAL)
        assert {name: status for name, (status, _) in statuses.items()} == dict.fromkeys(
            ["shell", "list_files", "glob", "grep", "repo_map"], "ok"
        )
        listed = finished[1]["result"]
        assert "newline.txt" in listed and "calc.py" in listed
    assert lines[-1]["type"] == "result"
    _check_result(lines[-1])
    # The files are there, byte for byte: nothing was lost or renamed.
    for name, data in FILES.items():
        assert Path(repo, name.decode("utf-8", "surrogateescape")).read_bytes() == data


async def test_acp_turn_ends_with_the_bytes_on_disk(
    scripted_server: ScriptedServer, tmp_path: Path
) -> None:
    repo = _repo(tmp_path)
    _script(scripted_server, "Made them.")
    client = EditorClient()
    args = ("--base-url", scripted_server.base_url, "--sandbox", "none")
    async with spawn_acp(client, repo, tmp_path, *args) as (conn, _proc):
        await conn.initialize(protocol_version=1)
        session = await conn.new_session(cwd=str(repo), mcp_servers=[])
        await conn.set_session_mode(session_id=session.session_id, mode_id="full-auto")
        done = await conn.prompt(session_id=session.session_id, prompt=[text_block("go")])
        assert done.stop_reason == "end_turn"
    finished = [
        u
        for u in client.updates
        if u.session_update == "tool_call_update" and u.status in ("completed", "failed")
    ]
    expected = ["completed"] * (1 + len(LOOK_AROUND))
    expected[1 + LOOK_AROUND.index(("read_file", {"path": "calc.py"}))] = "failed"
    assert [u.status for u in finished] == expected
    assert "Made them." in client.message_text()


async def test_github_bot_opens_the_pull_request_with_the_answer(
    scripted_server: ScriptedServer, github: FakeGitHub, remote: Path, act: Act
) -> None:
    _script(scripted_server, "Made them.")
    code, out = await act("issue_comment.json", "issue_comment")
    assert code == 0, out
    (pull,) = github.calls_to("POST", rf"/repos/{REPOSITORY}/pulls")
    assert "Made them." in pull.body["body"] and "Traceback" not in pull.body["body"]
    assert "Traceback" not in github.comments[9000]
    branch = pull.body["head"]
    tree = ["git", "ls-tree", "-z", "--name-only", branch]
    listed = subprocess.run(tree, cwd=remote, capture_output=True, check=True).stdout.split(b"\0")
    for name, data in FILES.items():
        assert name in listed
        shown = subprocess.run(
            ["git", "show", b"%s:%s" % (branch.encode(), name)],
            cwd=remote,
            capture_output=True,
            check=True,
        )
        assert shown.stdout == data


@pytest.mark.parametrize("fmt", ["json", "stream-json"])
async def test_model_text_with_lone_surrogates_is_escaped(
    scripted_server: ScriptedServer, tmp_path: Path, fmt: str, headless_argv: tuple[str, ...]
) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    stream = SGLangStream().reasoning("think \ud800 hard").content("caf\udcff done")
    # json.dumps escapes the surrogates as \ud800, as a server's JSON can.
    scripted_server.enqueue(sse_response([json.dumps(c) for c in stream.chunks()]))
    code, out, err = await run_clover(repo, *_headless(headless_argv, fmt), home=tmp_path)
    assert code == 0, err[-3000:]
    lines = [json.loads(line) for line in out.splitlines()]
    assert lines[-1]["result"] == "caf\\xff done"
    if fmt == "stream-json":
        reasoning = "".join(e["text"] for e in lines if e["type"] == "reasoning_delta")
        assert reasoning == "think \ufffd hard"
