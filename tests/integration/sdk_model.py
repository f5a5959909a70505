"""The scripted model of the SDK tests and of docs/sdk.md's examples.

It answers the scripted server's chat requests by the latest user prompt and
the tool results that followed it, like a model working a task step by step:

- "Fix the failing test ..." / "Make add() ...": edits ``calc.py``, then says so;
- "Now run the tests": runs pytest with the shell tool, then reports the result;
- "What is the weather in Paris? ...": calls the ``weather`` tool, then tries
  ``rm -rf build``, then answers with both results;
- "Count to ten slowly": answers in blocks the test releases one at a time.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

from tests.integration.sse_server import (
    CHAT_PATH,
    MODELS_PATH,
    RecordedRequest,
    error_response,
    json_response,
    sse_response,
)
from tests.integration.stream_shapes import SGLangStream

FIX = {"path": "calc.py", "old_string": "return a - b", "new_string": "return a + b"}


def failing_project(where: Path) -> Path:
    """``where/your-project``: a git repository whose one test fails."""
    project = where / "your-project"
    project.mkdir()
    (project / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    (project / "test_calc.py").write_text(
        "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"
    )
    subprocess.run(["git", "init", "-q"], cwd=project, check=True)
    return project


def _text(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return ""


def prompt_and_results(body: dict[str, Any]) -> tuple[str, list[str]]:
    """The latest user prompt and the tool results since it."""
    messages = body["messages"]
    last = max(i for i, m in enumerate(messages) if m.get("role") == "user")
    results = [_text(m) for m in messages[last + 1 :] if m.get("role") == "tool"]
    return _text(messages[last]), results


def answer(body: dict[str, Any]) -> SGLangStream:
    """The next step of the task the request's conversation is at."""
    prompt, results = prompt_and_results(body)
    stream = SGLangStream()
    if prompt.startswith(("Fix the failing test", "Make add()")):
        if not results:
            stream.tool_call("edit_file", FIX)
        else:
            stream.content("Fixed add: it subtracted instead of adding.")
    elif prompt.startswith("Now run the tests"):
        if not results:
            stream.tool_call("shell", {"command": "python3 -m pytest -q"})
        else:
            stream.content(f"The tests did not run: {results[0]}")
    elif prompt.startswith("What is the weather in Paris?"):
        if not results:
            stream.tool_call("weather", {"city": "Paris"})
        elif len(results) == 1:
            stream.tool_call("shell", {"command": "rm -rf build"})
        else:
            stream.content(f"{results[0]}. The build folder stays: {results[1]}")
    else:
        stream.content(f"I was asked: {prompt[:80]}")
    return stream


def model(request: RecordedRequest) -> object:
    """A responder for ``ScriptedServer``: the model list, then ``answer``."""
    if request.path == MODELS_PATH:
        return json_response({"object": "list", "data": [{"id": "clover", "object": "model"}]})
    if request.path != CHAT_PATH:
        return error_response(404, "no such endpoint")
    return sse_response(answer(request.json()).chunks())
