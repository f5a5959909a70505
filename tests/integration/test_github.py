"""``clover-code github`` end to end, as inside an Actions job.

A loopback server plays the GitHub REST API (``github_api_server.py``,
recording every call), the event payloads are real-shaped files
(``github_events/``), the "remote" is a local bare repository, and the
scripted model server makes the edit. The real command runs in a subprocess
with the job's environment, token included, and must never hand the token to
the model or to a shell command the model runs.
"""

from __future__ import annotations

import asyncio
import base64
import functools
import json
import os
import subprocess
import sys
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.integration.github_api_server import FakeGitHub
from tests.integration.sandbox_fixtures import KINDS
from tests.integration.sse_server import (
    MODELS_PATH,
    RecordedRequest,
    ScriptedResponse,
    ScriptedServer,
    error_response,
    json_response,
    sse_response,
)
from tests.integration.stream_shapes import SGLangStream
from tests.waiting import within

pytestmark = pytest.mark.integration

EVENTS = Path(__file__).parent / "github_events"
REPOSITORY = "octo-org/octo-repo"
TOKEN = "ghs_s3cr3tTokenValue0123456789abcdefXYZ"
RUNTIME_TOKEN = "actions-runtime-s3cr3t-4242"
STORED_HEADER = base64.b64encode(f"x-access-token:{TOKEN}".encode()).decode()


def git(cwd: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True)
    return done.stdout


@pytest.fixture
def github() -> Iterator[FakeGitHub]:
    fake = FakeGitHub(REPOSITORY, permissions={"maintainer-mia": "maintain"})
    fake.start()
    try:
        yield fake
    finally:
        fake.stop()


@pytest.fixture
def remote(tmp_path: Path) -> Path:
    """A bare "GitHub" repository with main and a feature/mul branch."""
    bare = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(bare)], check=True)
    seed = tmp_path / "seed"
    seed.mkdir()
    git(seed, "init", "-q", "-b", "main")
    git(seed, "config", "user.name", "Mia")
    git(seed, "config", "user.email", "mia@example.com")
    (seed / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    (seed / "check.py").write_text("from calc import add\nassert add(2, 3) == 5, add(2, 3)\n")
    git(seed, "add", ".")
    git(seed, "commit", "-q", "-m", "calc")
    git(seed, "remote", "add", "origin", bare.as_uri())
    git(seed, "push", "-q", "origin", "main")
    git(seed, "checkout", "-q", "-b", "feature/mul")
    with (seed / "calc.py").open("a") as f:
        f.write("\n\ndef mul(a, b):\n    return a * b\n")
    git(seed, "commit", "-q", "-am", "mul")
    git(seed, "push", "-q", "origin", "feature/mul")
    return bare


@pytest.fixture
def checkout(tmp_path: Path, remote: Path) -> Path:
    """The job's checkout of main, as actions/checkout leaves it (no stored credentials)."""
    work = tmp_path / "work"
    subprocess.run(["git", "clone", "-q", remote.as_uri(), str(work)], check=True)
    return work


def sglang(build: Any) -> Any:
    stream = SGLangStream()
    build(stream)
    return sse_response(stream.chunks())


def fix_add_script(server: ScriptedServer) -> None:
    """The model dumps its environment, fixes add() and answers."""
    server.enqueue(
        sglang(
            lambda s: s.tool_call("shell", {"command": "env; cat .git/config; echo ENV-DUMPED"})
        ),
        sglang(
            lambda s: s.tool_call(
                "edit_file",
                {"path": "calc.py", "old_string": "return a - b", "new_string": "return a + b"},
            )
        ),
        sglang(lambda s: s.content("Fixed `add`: it subtracted.")),
    )


Act = Callable[..., Awaitable[tuple[int, str]]]
"""``run_github``'s signature, less the fixtures ``act`` binds."""


@pytest.fixture
def act(checkout: Path, github: FakeGitHub, scripted_server: ScriptedServer, tmp_path: Path) -> Act:
    """``run_github`` on this test's checkout, fake GitHub, model server and home."""
    return functools.partial(
        run_github, checkout=checkout, github=github, server=scripted_server, home=tmp_path
    )


async def run_github(
    event: str,
    event_name: str,
    *,
    checkout: Path,
    github: FakeGitHub,
    server: ScriptedServer,
    home: Path,
    sandbox: str = "none",
    base_url: str | None = None,
    host_shell: bool = True,
    extra_env: dict[str, str] | None = None,
) -> tuple[int, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CLOVER_", "GITHUB_", "GH_"))}
    env.update(
        PYTHONPATH=str(Path(__file__).resolve().parents[2]),
        XDG_DATA_HOME=str(home / "data"),
        XDG_CONFIG_HOME=str(home / "config"),
        GITHUB_ACTIONS="true",
        GITHUB_EVENT_PATH=str(EVENTS / event),
        GITHUB_EVENT_NAME=event_name,
        GITHUB_REPOSITORY=REPOSITORY,
        GITHUB_TOKEN=TOKEN,
        GITHUB_API_URL=github.url,
        GITHUB_WORKSPACE=str(checkout),
        ACTIONS_RUNTIME_TOKEN=RUNTIME_TOKEN,
        CLOVER_BASE_URL=base_url or server.base_url,
        CLOVER_SANDBOX=sandbox,
        CLOVER_APPROVAL="full-auto",
    )
    if sandbox == "none" and host_shell:
        env["CLOVER_GITHUB_HOST_SHELL"] = "1"  # the opt-in that accepts the exposure
    env.update(extra_env or {})
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "clover_code",
        "github",
        cwd=checkout,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    out, _ = await within(proc.communicate(), message="clover-code github to exit")
    assert proc.returncode is not None
    return proc.returncode, out.decode()


def assert_token_kept_out(server: ScriptedServer) -> None:
    bodies = [r.body.decode() for r in server.chat_requests]
    # The shell's env dump reached the model, so a token in it would have too.
    assert any("ENV-DUMPED" in b and "GITHUB_REPOSITORY=" in b for b in bodies)
    for secret in (TOKEN, RUNTIME_TOKEN, STORED_HEADER):
        assert not [body for body in bodies if secret in body], f"{secret} reached the model"
    for name in ("GITHUB_TOKEN=", "ACTIONS_RUNTIME_TOKEN="):
        assert not [body for body in bodies if name in body], f"{name} reached the model"


async def test_issue_comment_opens_a_pull_request(
    scripted_server: ScriptedServer, github: FakeGitHub, checkout: Path, remote: Path, act: Act
) -> None:
    # As actions/checkout leaves it without persist-credentials: false.
    git(
        checkout,
        "config",
        "--local",
        "http.https://github.com/.extraheader",
        f"AUTHORIZATION: basic {STORED_HEADER}",
    )
    fix_add_script(scripted_server)
    code, out = await act("issue_comment.json", "issue_comment")
    assert code == 0, out
    assert [c.method for c in github.calls_to("GET", r"/repos/.*/permission")] == ["GET"]
    created = github.calls_to("POST", rf"/repos/{REPOSITORY}/issues/42/comments")
    assert len(created) == 1 and "Working on it" in created[0].body["body"]
    updates = github.calls_to("PATCH", rf"/repos/{REPOSITORY}/issues/comments/9000")
    assert updates, "the progress comment was never updated"
    # Created first, updated after; the last update links the pull request.
    assert github.calls.index(created[0]) < github.calls.index(updates[0])
    assert "pull/100" in updates[-1].body["body"] and "Fixed `add`" in updates[-1].body["body"]
    branch = "clover/issue-42-add-subtracts-instead-of-adding"
    pulls = github.calls_to("POST", rf"/repos/{REPOSITORY}/pulls")
    assert len(pulls) == 1
    assert pulls[0].body["head"] == branch and pulls[0].body["base"] == "main"
    assert "Closes #42" in pulls[0].body["body"]
    assert all(c.authorization == f"Bearer {TOKEN}" for c in github.calls)
    pushed = git(remote, "show", f"{branch}:calc.py")
    assert "return a + b" in pushed
    assert git(remote, "show", "main:calc.py").count("return a - b") == 1
    assert git(remote, "log", "-1", "--format=%an", branch).strip() == "clover-code[bot]"
    assert_token_kept_out(scripted_server)
    assert STORED_HEADER not in (checkout / ".git" / "config").read_text()
    assert "removed http.https://github.com/.extraheader" in out


async def test_review_comment_pushes_to_the_pr_branch(
    scripted_server: ScriptedServer, github: FakeGitHub, remote: Path, act: Act
) -> None:
    github.pulls[7] = json.loads((EVENTS / "pull_7.json").read_text())
    fix_add_script(scripted_server)
    before = git(remote, "rev-parse", "feature/mul").strip()
    code, out = await act("pull_request_review_comment.json", "pull_request_review_comment")
    assert code == 0, out
    assert github.calls_to("GET", rf"/repos/{REPOSITORY}/pulls/7")
    assert not github.calls_to("POST", rf"/repos/{REPOSITORY}/pulls")
    calc = git(remote, "show", "feature/mul:calc.py")
    assert "return a + b" in calc and "def mul" in calc
    assert git(remote, "rev-parse", "feature/mul~1").strip() == before
    updates = github.calls_to("PATCH", rf"/repos/{REPOSITORY}/issues/comments/9000")
    assert updates and "feature/mul" in updates[-1].body["body"]
    # The model saw the file and line the comment was left on.
    first = scripted_server.chat_requests[0].body.decode()
    assert "calc.py at line 2" in first
    assert_token_kept_out(scripted_server)


async def test_nothing_changed_answers_in_the_comment(
    scripted_server: ScriptedServer, github: FakeGitHub, remote: Path, act: Act
) -> None:
    scripted_server.enqueue(sglang(lambda s: s.content("add() is in calc.py, line 1.")))
    code, out = await act("issue_comment.json", "issue_comment")
    assert code == 0, out
    assert not github.calls_to("POST", rf"/repos/{REPOSITORY}/pulls")
    assert github.comments[9000].endswith("add() is in calc.py, line 1.")
    assert "clover/" not in git(remote, "branch", "--list")


async def test_a_comment_without_the_trigger_does_nothing(
    scripted_server: ScriptedServer, github: FakeGitHub, act: Act
) -> None:
    code, out = await act("issue_comment_no_trigger.json", "issue_comment")
    assert code == 0, out
    assert "nothing to do" in out
    assert github.calls == [] and scripted_server.chat_requests == []


async def test_a_commenter_without_write_access_is_refused(
    scripted_server: ScriptedServer, github: FakeGitHub, remote: Path, act: Act
) -> None:
    code, out = await act("issue_comment_outsider.json", "issue_comment")
    assert code == 0, out
    assert [c.path for c in github.calls] == [
        f"/repos/{REPOSITORY}/collaborators/drive-by-dan/permission",
        f"/repos/{REPOSITORY}/issues/42/comments",
    ]
    refusal = github.calls[1].body["body"]
    assert "@drive-by-dan" in refusal and "write access" in refusal
    assert scripted_server.chat_requests == []
    assert "clover/" not in git(remote, "branch", "--list")


@pytest.mark.parametrize("kind", KINDS)
async def test_the_sandbox_never_sees_the_token(
    kind: str,
    request: pytest.FixtureRequest,
    scripted_server: ScriptedServer,
    remote: Path,
    act: Act,
) -> None:
    request.getfixturevalue("sandbox_image" if kind == "docker" else "bwrap_works")
    fix_add_script(scripted_server)
    code, out = await act("issue_comment.json", "issue_comment", sandbox=kind)
    assert code == 0, out
    bodies = [r.body.decode() for r in scripted_server.chat_requests]
    # The env dump ran inside the sandbox (its own user) and reached the model.
    assert any("ENV-DUMPED" in b and "USER=sandbox" in b for b in bodies)
    assert all(TOKEN not in b and RUNTIME_TOKEN not in b for b in bodies)
    assert "return a + b" in git(
        remote, "show", "clover/issue-42-add-subtracts-instead-of-adding:calc.py"
    )


async def test_a_failed_task_says_so_in_the_progress_comment(
    github: FakeGitHub, remote: Path, closed_port_url: str, act: Act
) -> None:
    code, out = await act("issue_comment.json", "issue_comment", base_url=closed_port_url)
    assert code == 3, out  # no engine, as headless says
    assert github.comments[9000].count("The task failed") == 1
    assert not github.calls_to("POST", rf"/repos/{REPOSITORY}/pulls")
    assert "clover/" not in git(remote, "branch", "--list")


async def test_sandbox_none_is_refused_without_the_opt_in(
    scripted_server: ScriptedServer, github: FakeGitHub, act: Act
) -> None:
    code, out = await act("issue_comment.json", "issue_comment", host_shell=False)
    assert code == 2, out
    assert "sandbox none" in out and "CLOVER_GITHUB_HOST_SHELL=1" in out
    assert "Traceback" not in out and TOKEN not in out
    assert github.calls == [] and scripted_server.chat_requests == []


def read_every_environ(server: ScriptedServer) -> None:
    """The issue's attack: the agent's shell reads every process's start environment (the
    bot's, two levels up, above all) into a file, then fixes add() and answers."""
    bot = "$(awk '{print $4}' /proc/$PPID/stat)"
    scan = (
        f"tr '\\0' ' ' < /proc/{bot}/cmdline; echo; "
        "for f in /proc/[0-9]*/environ; do tr '\\0' '\\n' < $f; done 2>/dev/null"
        " | grep -aE '^(GITHUB_TOKEN|GH_TOKEN|ACTIONS_[A-Z_]+|INPUT_[A-Z_]+)=' > leak.txt; "
        "cat leak.txt; echo PROC-SCANNED"
    )
    server.enqueue(
        sglang(lambda s: s.tool_call("shell", {"command": scan})),
        sglang(
            lambda s: s.tool_call(
                "edit_file",
                {"path": "calc.py", "old_string": "return a - b", "new_string": "return a + b"},
            )
        ),
        sglang(lambda s: s.content("Fixed `add`.")),
    )


async def test_no_process_alive_during_the_run_has_the_token_in_its_environment(
    scripted_server: ScriptedServer, github: FakeGitHub, remote: Path, act: Act
) -> None:
    read_every_environ(scripted_server)
    code, out = await act("issue_comment.json", "issue_comment")
    assert code == 0, out
    bodies = [r.body.decode() for r in scripted_server.chat_requests]
    scanned = [b for b in bodies if "PROC-SCANNED" in b]
    # The scan ran on the host and saw the bot's own process.
    assert scanned and "clover_code github" in scanned[0]
    for body in bodies:
        assert TOKEN not in body and RUNTIME_TOKEN not in body and "GITHUB_TOKEN=" not in body
    leak = git(remote, "show", "clover/issue-42-add-subtracts-instead-of-adding:leak.txt")
    assert TOKEN not in leak and RUNTIME_TOKEN not in leak
    assert all(TOKEN not in body for body in github.comments.values())


MODEL_KEY = "sk-model-key-7a7a7a7a7a7a7a7a"
URL_PASSWORD = "pw-in-the-url-5150"


def leak_script(command: str, answer: str = "Done.") -> Callable[[ScriptedServer], None]:
    def script(server: ScriptedServer) -> None:
        server.enqueue(
            sglang(lambda s: s.tool_call("shell", {"command": command})),
            sglang(lambda s: s.content(answer)),
        )

    return script


@pytest.mark.parametrize(
    ("script", "where"),
    [
        (
            leak_script(f"printf '%s' {TOKEN} > notes.txt"),
            "the change to notes.txt contains the GitHub token",
        ),
        (
            leak_script(f"mkdir -p cfg && echo 'header={STORED_HEADER}' > cfg/git.ini"),
            "the change to cfg/git.ini contains the GitHub token (as git's header)",
        ),
        (
            leak_script(f"printf '\\000\\001{RUNTIME_TOKEN}\\377' > blob.bin"),
            "the change to blob.bin contains the value of ACTIONS_RUNTIME_TOKEN",
        ),
        (
            leak_script(f"echo {MODEL_KEY} > key.txt"),
            "the change to key.txt contains the model's API key",
        ),
        (
            leak_script(f"echo {URL_PASSWORD} > url.txt"),
            "the change to url.txt contains the password in the model server's URL",
        ),
        (
            leak_script(
                "echo '# x' >> calc.py && git -c user.name=a -c user.email=a@example.com "
                f"commit -qam 'note {RUNTIME_TOKEN}'"
            ),
            "a commit message contains the value of ACTIONS_RUNTIME_TOKEN",
        ),
        (
            leak_script("echo '# x' >> calc.py", answer=f"The runtime token is {RUNTIME_TOKEN}."),
            "the agent's answer contains the value of ACTIONS_RUNTIME_TOKEN",
        ),
    ],
)
async def test_a_secret_in_the_change_or_the_answer_stops_the_job(
    scripted_server: ScriptedServer,
    github: FakeGitHub,
    remote: Path,
    closed_port_url: str,
    act: Act,
    script: Callable[[ScriptedServer], None],
    where: str,
) -> None:
    script(scripted_server)
    port = scripted_server.base_url.split("//", 1)[1]
    code, out = await act(
        "issue_comment.json",
        "issue_comment",
        base_url=f"http://mia:{URL_PASSWORD}@{port}",
        extra_env={"CLOVER_API_KEY": MODEL_KEY},
    )
    assert code == 1, out
    assert where in out and "nothing was pushed or posted" in out
    assert "clover/" not in git(remote, "branch", "--list")
    assert not github.calls_to("POST", rf"/repos/{REPOSITORY}/pulls")
    assert where in github.comments[9000]
    posted = json.dumps([c.body for c in github.calls])
    for secret in (TOKEN, RUNTIME_TOKEN, STORED_HEADER, MODEL_KEY, URL_PASSWORD):
        assert secret not in out and secret not in posted


async def test_a_pull_request_from_the_default_branch_gets_a_branch_of_its_own(
    scripted_server: ScriptedServer, github: FakeGitHub, remote: Path, act: Act
) -> None:
    pull = json.loads((EVENTS / "pull_7.json").read_text())
    pull["head"]["ref"], pull["base"]["ref"] = "main", "feature/mul"
    github.pulls[7] = pull
    fix_add_script(scripted_server)
    before = git(remote, "rev-parse", "main").strip()
    code, out = await act("pull_request_review_comment.json", "pull_request_review_comment")
    assert code == 0, out
    assert git(remote, "rev-parse", "main").strip() == before, "main moved"
    branch = "clover/pr-7-add-a-mul-helper"
    assert "return a + b" in git(remote, "show", f"{branch}:calc.py")
    [opened] = github.calls_to("POST", rf"/repos/{REPOSITORY}/pulls")
    assert opened.body["head"] == branch and opened.body["base"] == "main"
    assert "pull/" in github.comments[9000] and branch in github.comments[9000]


async def test_a_server_echoing_the_key_in_a_401_leaks_it_into_no_comment(
    scripted_server: ScriptedServer, github: FakeGitHub, remote: Path, act: Act
) -> None:
    def answer(request: RecordedRequest) -> ScriptedResponse:
        if request.path == MODELS_PATH:
            return json_response({"object": "list", "data": [{"id": "test-model"}]})
        sent = request.headers.get("authorization", "")
        return error_response(401, f"invalid credentials in header 'Authorization: {sent}'")

    scripted_server.responder = answer
    code, out = await act(
        "issue_comment.json", "issue_comment", extra_env={"CLOVER_API_KEY": MODEL_KEY}
    )
    assert code == 3, out
    assert any(
        r.headers.get("authorization") == f"Bearer {MODEL_KEY}" for r in scripted_server.requests
    )
    assert "invalid credentials" in github.comments[9000] and "[REDACTED]" in github.comments[9000]
    posted = json.dumps([c.body for c in github.calls])
    assert MODEL_KEY not in posted and MODEL_KEY not in out
