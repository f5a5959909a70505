"""The pieces of ``clover-code github`` that need no network: events, env scrubbing, git env."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest

from clover_code.errors import UsageError
from clover_code.github.credentials import without_credentials
from clover_code.github.event import read_event
from clover_code.github.git import branch_slug, push_env
from clover_code.github.task import build_prompt
from tests.paths import GITHUB_EVENTS

EVENTS = GITHUB_EVENTS


def test_issue_comment_is_read() -> None:
    request = read_event(EVENTS / "issue_comment.json", "issue_comment")
    assert request is not None
    assert (request.kind, request.number, request.author) == ("issue", 42, "maintainer-mia")
    assert request.mentions("@clover") and request.mentions("@CLOVER")
    assert not request.mentions("@robot")
    assert request.default_branch == "main"


def test_review_comment_is_read_with_its_file_and_line() -> None:
    request = read_event(EVENTS / "pull_request_review_comment.json", None)
    assert request is not None
    assert (request.kind, request.number) == ("pull_request", 7)
    assert (request.review_path, request.review_line) == ("calc.py", 2)
    assert "calc.py at line 2" in build_prompt(request, "@clover")


def test_a_new_issue_mentioning_the_trigger_is_a_request(tmp_path: Path) -> None:
    payload = json.loads((EVENTS / "issue_comment.json").read_text())
    payload["action"] = "opened"
    payload["issue"]["body"] = "@clover please fix it"
    del payload["comment"]
    path = tmp_path / "issues.json"
    path.write_text(json.dumps(payload))
    request = read_event(path, "issues")
    assert request is not None and request.author == "reporter-rob"
    assert request.mentions("@clover")


def test_edited_comments_and_other_events_are_ignored(tmp_path: Path) -> None:
    payload = json.loads((EVENTS / "issue_comment.json").read_text())
    payload["action"] = "edited"
    path = tmp_path / "edited.json"
    path.write_text(json.dumps(payload))
    assert read_event(path, "issue_comment") is None
    assert read_event(EVENTS / "issue_comment.json", "push") is None


def test_a_missing_event_file_is_one_sentence(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="does not exist"):
        read_event(tmp_path / "nope.json", "issue_comment")


def test_scrubbed_env_drops_the_token_under_any_name() -> None:
    env = {
        "GITHUB_TOKEN": "tok123456",
        "GH_TOKEN": "tok123456",
        "MY_ALIAS": "Bearer tok123456",
        "ACTIONS_RUNTIME_TOKEN": "runtime",
        "ACTIONS_ID_TOKEN_REQUEST_URL": "https://example",
        "CLOVER_API_KEY": "model-key",
        "GITHUB_REPOSITORY": "o/r",
        "PATH": "/usr/bin",
    }
    assert without_credentials(env, "tok123456") == {
        "CLOVER_API_KEY": "model-key",
        "GITHUB_REPOSITORY": "o/r",
        "PATH": "/usr/bin",
    }


def test_push_env_carries_the_token_as_a_git_config_header() -> None:
    env = push_env("tok", "https://github.com/", {"GIT_CONFIG_COUNT": "1", "PATH": "/bin"})
    assert env["GIT_CONFIG_COUNT"] == "2"
    assert env["GIT_CONFIG_KEY_1"] == "http.https://github.com/.extraheader"
    header = env["GIT_CONFIG_VALUE_1"].removeprefix("AUTHORIZATION: basic ")
    assert base64.b64decode(header) == b"x-access-token:tok"


@pytest.mark.parametrize(
    ("title", "slug"),
    [
        ("add() subtracts instead of adding", "add-subtracts-instead-of-adding"),
        ("Ünïcode / and spaces!!", "n-code-and-spaces"),
        ("???", "change"),
    ],
)
def test_branch_slug(title: str, slug: str) -> None:
    assert branch_slug(title) == slug


def test_outside_actions_the_command_says_what_is_missing(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    from clover_code.github.main import main

    for name in ("GITHUB_EVENT_PATH", "GITHUB_REPOSITORY", "GITHUB_TOKEN", "GH_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    assert main(["--trigger", "@clover", "-C", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "GITHUB_EVENT_PATH, GITHUB_REPOSITORY, GITHUB_TOKEN not set" in err
    assert "Traceback" not in err


def test_the_jobs_secrets_are_named_and_short_values_left_out() -> None:
    from clover_code.github.leaks import find_secret, job_secrets

    held = {
        "GITHUB_TOKEN": "ghs_tokenvalue123",
        "ACTIONS_RUNTIME_TOKEN": "runtime-secret-1",
        "ACTIONS_ID_TOKEN_REQUEST_URL": "https://pipelines.example/oidc",
        "ACTIONS_STEP_DEBUG": "true",
    }
    found = job_secrets(
        "ghs_tokenvalue123",
        held,
        api_key="sk-key-123456",
        base_url="https://tok-user-99@m.example/v1",
    )
    assert found == {
        "the GitHub token": "ghs_tokenvalue123",
        "the GitHub token (as git's header)": base64.b64encode(
            b"x-access-token:ghs_tokenvalue123"
        ).decode(),
        "the value of ACTIONS_RUNTIME_TOKEN": "runtime-secret-1",
        "the model's API key": "sk-key-123456",
        "the user in the model server's URL": "tok-user-99",
    }
    assert find_secret(b"\x00\xffruntime-secret-1", found) == "the value of ACTIONS_RUNTIME_TOKEN"
    assert find_secret("nothing here", found) is None
