"""The batch bench's tasks and the scripted model that solves them (see ``batch.py``).

Each task is its own git repository holding one module with a one-line bug
(``return a - b`` where ``a + b`` is meant). The scripted model solves every
task in three requests, whichever agent asks: read the module, fix it with
``sed``, finish. It tells the agents apart by the tools in the request:
clover-code offers ``shell`` (and its other tools), mini-swe-agent one
``bash`` tool, whose run ends when a command's output starts with its
submission marker.
"""

from __future__ import annotations

import json
import re
import subprocess
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.integration.sse_server import (
    MODELS_PATH,
    Pause,
    RecordedRequest,
    ScriptedResponse,
    Send,
    json_response,
    sse_response,
)
from tests.integration.stream_shapes import SGLangStream

REQUESTS_PER_TASK = 3
FIXED = "+    return a + b"
"""In a task's patch once the bug is fixed."""
_MARK = re.compile(r"\[bench-task (t\d+)\]")
MINI_SUBMIT = "COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"
"""mini-swe-agent ends a run when a command's output starts with this line."""


@dataclass(frozen=True, slots=True)
class Task:
    """One generated task."""

    id: str
    repo: Path
    module: str
    function: str

    @property
    def statement(self) -> str:
        """The task text both agents get."""
        return (
            f"[bench-task {self.id}] `{self.function}(a, b)` in `{self.module}` should return "
            "the sum of its arguments but returns their difference. Fix it."
        )

    @property
    def test_command(self) -> str:
        """Passes once the bug is fixed."""
        name = self.module.removesuffix(".py")
        return f"python3 -c 'from {name} import {self.function}; assert {self.function}(2, 3) == 5'"

    def commands(self) -> tuple[str, str]:
        """The two shell commands that solve it: read the module, then fix it."""
        return f"cat {self.module}", f"sed -i 's/return a - b/return a + b/' {self.module}"


def _git(repo: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=bench", "-c", "user.email=bench@example.invalid", *args],
        cwd=repo,
        check=True,
        capture_output=True,
    )


def make_tasks(root: Path, count: int) -> list[Task]:
    """``count`` repositories under ``root``, each with one buggy module."""
    tasks = []
    for i in range(count):
        task = Task(f"t{i:02d}", root / f"t{i:02d}", f"calc_{i:02d}.py", f"add_{i:02d}")
        task.repo.mkdir(parents=True)
        (task.repo / task.module).write_text(
            f'"""Arithmetic for task {i}."""\n\n\n'
            f"def {task.function}(a, b):\n"
            f'    """The sum of a and b."""\n'
            "    return a - b\n\n\n"
            f"def twice_{i:02d}(a):\n"
            "    return 2 * a\n"
        )
        (task.repo / "README.md").write_text(f"Task {i}.\n")
        _git(task.repo, "init", "-q")
        _git(task.repo, "add", "-A")
        _git(task.repo, "commit", "-q", "-m", "initial")
        tasks.append(task)
    return tasks


def write_clover_tasks(tasks: list[Task], path: Path, *, tests: bool = False) -> None:
    """The task file ``clover-code batch`` reads (with each task's test command if ``tests``)."""
    lines: list[dict[str, str]] = []
    for t in tasks:
        line = {"id": t.id, "repo": str(t.repo), "problem_statement": t.statement}
        if tests:
            line["test_command"] = t.test_command
        lines.append(line)
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))


@dataclass(slots=True)
class ScriptedModel:
    """Answers both agents after ``latency`` seconds, and records when each request came."""

    latency: float
    tasks: dict[str, Task]
    workdirs: dict[str, str] = field(default_factory=dict)
    """Task id -> the directory mini-swe-agent's local environment cloned it into
    (its commands run in the runner's directory, so each one starts with ``cd``)."""
    arrivals: defaultdict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    """Task id -> when each of its chat requests arrived (``time.monotonic``)."""
    unknown: int = 0

    def reset(self, workdirs: dict[str, str] | None = None) -> None:
        """Forget the previous run's requests."""
        self.arrivals = defaultdict(list)
        self.workdirs = dict(workdirs or {})
        self.unknown = 0

    def __call__(self, request: RecordedRequest) -> ScriptedResponse:
        if request.path == MODELS_PATH:
            return json_response({"object": "list", "data": [{"id": "test-model"}]})
        now = time.monotonic()
        body = request.json()
        messages: list[dict[str, Any]] = body["messages"]
        task = self.tasks.get(_task_id(messages) or "")
        step = sum(1 for m in messages if m.get("role") == "assistant")
        tools = {t.get("function", {}).get("name") for t in body.get("tools") or []}
        if task is None:
            self.unknown += 1
            return json_response({"error": {"message": "no bench task in the request"}}, 400)
        self.arrivals[task.id].append(now)
        if "shell" in tools:
            return self._clover(task, step, bool(body.get("stream")))
        return self._mini(task, step)

    def _clover(self, task: Task, step: int, stream: bool) -> ScriptedResponse:
        out = SGLangStream()
        if step < 2:
            out.tool_call("shell", {"command": task.commands()[step]})
        else:
            out.content("Fixed: it now returns a + b.")
        response = sse_response(out.chunks())
        assert response.steps is not None and stream
        response.steps.insert(0, Pause(self.latency))
        return response

    def _mini(self, task: Task, step: int) -> ScriptedResponse:
        commands = [*task.commands(), f"echo {MINI_SUBMIT} && git diff"]
        command = commands[min(step, 2)]
        if task.id in self.workdirs:
            command = f"cd {self.workdirs[task.id]} && {command}"
        thought = ["Read the module.", "Fix the operator.", "Submit the patch."][min(step, 2)]
        message = {
            "role": "assistant",
            "content": f"THOUGHT: {thought}",
            "tool_calls": [
                {
                    "id": f"call_{task.id}_{step}",
                    "type": "function",
                    "function": {"name": "bash", "arguments": json.dumps({"command": command})},
                }
            ],
        }
        completion = {
            "id": f"chatcmpl-{task.id}-{step}",
            "object": "chat.completion",
            "created": 1_700_000_000,
            "model": "test-model",
            "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls"}],
            "usage": {"prompt_tokens": 57, "completion_tokens": 32, "total_tokens": 89},
        }
        return ScriptedResponse(
            steps=[Pause(self.latency), Send(json.dumps(completion).encode())],
            content_type="application/json",
        )


def _task_id(messages: list[dict[str, Any]]) -> str | None:
    for message in messages:
        if message.get("role") != "user":
            continue
        content = message.get("content")
        text = content if isinstance(content, str) else json.dumps(content)
        if found := _MARK.search(text):
            return found.group(1)
    return None
