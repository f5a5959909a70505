"""End to end: what a pipeline reads from a headless run, on the real `clover-code` command.

The JSON result's patch (edits, files a shell command made, binary files),
``files_changed``, ``exit_reason`` and block counts; ``--output-schema`` with
its retries; and real json and stream-json output checked against the
schemas ``clover-code schema result|events`` prints, with ``jsonschema``.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from clover_code.outcome.result import TaskResult
from tests.integration.sse_server import ScriptedServer
from tests.integration.test_headless_e2e import run_clover, sglang

pytestmark = pytest.mark.integration


def printed_schema(which: str) -> dict[str, Any]:
    """The schema `clover-code schema WHICH` prints (a real subprocess)."""
    proc = subprocess.run(
        [sys.executable, "-m", "clover_code", "schema", which],
        capture_output=True,
        text=True,
        check=True,
    )
    schema: dict[str, Any] = json.loads(proc.stdout)
    jsonschema.Draft202012Validator.check_schema(schema)
    return schema


def edit_and_make_files(server: ScriptedServer) -> None:
    """The model edits calc.py, makes a text and a binary file with a command, then answers."""
    server.enqueue(
        sglang(
            lambda s: s.tool_call(
                "edit_file",
                {"path": "calc.py", "old_string": "return a - b", "new_string": "return a + b"},
            )
        ),
        sglang(
            lambda s: s.tool_call(
                "shell",
                {
                    "command": "printf 'made by a command\\n' > notes.txt && "
                    "printf '\\000\\001\\002binary' > blob.bin"
                },
            )
        ),
        sglang(lambda s: s.content("Fixed add and wrote notes.")),
    )


async def test_json_result_carries_the_patch_and_validates(
    scripted_server: ScriptedServer, repo: Path, tmp_path: Path, headless_argv: tuple[str, ...]
) -> None:
    edit_and_make_files(scripted_server)
    code, out, err = await run_clover(
        repo, "--task", "fix add", *headless_argv, "--output-format", "json", home=tmp_path
    )
    assert code == 0, err
    data = json.loads(out)
    jsonschema.validate(data, printed_schema("result"))
    result = TaskResult.model_validate(data)
    assert result.exit_reason == "completed" and result.error is None
    assert sorted(result.files_changed) == ["blob.bin", "calc.py", "notes.txt"]
    assert "-    return a - b\n+    return a + b" in result.patch
    assert "+made by a command" in result.patch
    assert "Binary files /dev/null and b/blob.bin differ" in result.patch
    assert result.turns == 3 and result.usage.blocks >= 3
    # the text parts of the patch turn the workspace as it was into what the run left
    before = tmp_path / "before"
    before.mkdir()
    (before / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    parts = ["diff --git " + part for part in result.patch.split("diff --git ")[1:]]
    text = "".join(part for part in parts if not part.startswith("diff --git a/blob.bin"))
    applied = subprocess.run(
        ["git", "apply", "-"], cwd=before, input=text, text=True, capture_output=True
    )
    assert applied.returncode == 0, applied.stderr
    assert (before / "calc.py").read_text() == (repo / "calc.py").read_text()
    assert (before / "notes.txt").read_text() == "made by a command\n"


async def test_stream_json_lines_validate_against_the_events_schema(
    scripted_server: ScriptedServer, repo: Path, tmp_path: Path, headless_argv: tuple[str, ...]
) -> None:
    edit_and_make_files(scripted_server)
    code, out, err = await run_clover(
        repo,
        "--task",
        "fix add",
        *headless_argv,
        "--output-format",
        "stream-json",
        home=tmp_path,
    )
    assert code == 0, err
    validator = jsonschema.Draft202012Validator(printed_schema("events"))
    lines = [json.loads(line) for line in out.splitlines()]
    for line in lines:
        validator.validate(line)
    kinds = {line["type"] for line in lines}
    assert {"session_started", "tool_call_finished", "usage", "result"} <= kinds
    # the schema is not a blank check: a made-up event type and a missing field fail
    assert not validator.is_valid({"type": "no_such_event"})
    assert not validator.is_valid({"type": "content_delta"})
    assert lines[-1]["files_changed"] == ["blob.bin", "calc.py", "notes.txt"]


async def test_output_schema_retries_until_the_answer_validates(
    scripted_server: ScriptedServer, repo: Path, tmp_path: Path, headless_argv: tuple[str, ...]
) -> None:
    schema = tmp_path / "schema.json"
    schema.write_text(
        json.dumps(
            {
                "type": "object",
                "properties": {"fixed": {"type": "boolean"}, "files": {"type": "array"}},
                "required": ["fixed", "files"],
                "additionalProperties": False,
            }
        )
    )
    scripted_server.enqueue(
        sglang(lambda s: s.content("It is fixed.")),
        sglang(lambda s: s.content('{"fixed": "yes", "files": []}')),
        sglang(lambda s: s.content('```json\n{"fixed": true, "files": ["calc.py"]}\n```')),
    )
    code, out, err = await run_clover(
        repo,
        "--task",
        "fix add",
        *headless_argv,
        "--output-format",
        "json",
        "--output-schema",
        str(schema),
        home=tmp_path,
    )
    assert code == 0, err
    result = TaskResult.model_validate_json(out)
    assert result.structured_output == {"fixed": True, "files": ["calc.py"]}
    requests = [r.json()["messages"] for r in scripted_server.chat_requests]
    assert len(requests) == 3
    assert '"required"' in requests[0][-1]["content"]  # the task carries the schema
    assert "not JSON" in requests[1][-1]["content"]
    assert "at fixed: 'yes' is not of type 'boolean'" in requests[2][-1]["content"]


async def test_output_schema_never_met_exits_1(
    scripted_server: ScriptedServer, repo: Path, tmp_path: Path, headless_argv: tuple[str, ...]
) -> None:
    schema = tmp_path / "schema.json"
    schema.write_text('{"type": "integer"}')
    scripted_server.enqueue(*(sglang(lambda s: s.content('"seven"')) for _ in range(4)))
    code, out, err = await run_clover(
        repo,
        "--task",
        "count",
        *headless_argv,
        "--output-format",
        "json",
        "--output-schema",
        str(schema),
        home=tmp_path,
    )
    assert code == 1, err
    result = TaskResult.model_validate_json(out)
    assert result.status == "error" and result.exit_reason == "output_schema"
    assert result.structured_output is None
    assert result.error is not None and "'seven' is not of type 'integer'" in result.error
    assert len(scripted_server.chat_requests) == 4


@pytest.mark.parametrize(
    ("content", "words"),
    [
        (None, "does not exist"),
        ("{not json", "is not JSON"),
        ('{"type": "no-such-type"}', "is not a valid JSON Schema"),
        ("[1, 2]", "must hold a JSON object"),
    ],
)
async def test_bad_schema_file_is_a_usage_error(
    repo: Path, tmp_path: Path, content: str | None, words: str
) -> None:
    schema = tmp_path / "schema.json"
    if content is not None:
        schema.write_text(content)
    code, out, err = await run_clover(
        repo,
        "--task",
        "x",
        "--base-url",
        "http://127.0.0.1:9/v1",
        "--output-format",
        "json",
        "--output-schema",
        str(schema),
        home=tmp_path,
    )
    assert code == 2
    assert err.count("\n") == 1 and words in err and "Traceback" not in err
    assert TaskResult.model_validate_json(out).exit_reason == "usage_error"
