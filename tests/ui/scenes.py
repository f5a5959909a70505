"""Fixed event sequences for the snapshot tests: each main state of the app."""

from __future__ import annotations

from typing import Any

from clover_code import protocol as p

STARTED = p.SessionStarted(
    session_id="20260101-000000-abcdef",
    cwd="/work/demo",
    engine="remote",
    model="clover-35b-a3b",
    sandbox="docker",
    approval="ask",
    transcript="/home/u/.local/share/clover-code/sessions/20260101-000000-abcdef.jsonl",
)
OPEN: list[Any] = [
    STARTED,
    p.Notice(text="shell commands run in a Docker container, without network access"),
]

ANSWER = (
    "The `add` function subtracts instead of adding. I'll fix it:\n\n"
    "```python\ndef add(a, b):\n    return a + b\n```\n\n"
    "Then I'll run the tests."
)
DIFF = (
    "--- a/calc.py\n+++ b/calc.py\n@@ -1,2 +1,2 @@\n def add(a, b):\n"
    "-    return a - b\n+    return a + b\n"
)


def streaming() -> list[Any]:
    """Mid-answer: two committed blocks and a half-denoised third one."""
    tokens: list[str | None] = ["Then", " I", "'ll", None, None, " tests", None, "."]
    tokens += [None] * 8
    confidences = [0.99, 0.97, 0.85, 0.0, 0.0, 0.9, 0.0, 0.99] + [0.0] * 8
    return [
        p.TurnStarted(turn=1, text="fix add in calc.py"),
        p.ReasoningDelta(text="The user wants add fixed. calc.py has `return a - b`; "),
        p.ReasoningDelta(text="that is subtraction. Edit it, then run the tests."),
        p.ContentDelta(text=ANSWER[:60]),
        p.BlockCommitted(block=0, text=ANSWER[:60], token_count=32, steps=5),
        p.ContentDelta(text=ANSWER[60:104]),
        p.BlockCommitted(block=1, text=ANSWER[60:104], token_count=32, steps=4),
        p.BlockDraft(block=2, step=3, tokens=tokens, confidences=confidences),
    ]


def tool_with_diff() -> list[Any]:
    """A finished turn with an edit card (diff) and a shell card (exit code, output)."""
    return [
        p.TurnStarted(turn=1, text="fix add in calc.py"),
        p.ContentDelta(text="The `add` function subtracts. Fixing it."),
        p.BlockCommitted(block=0, text="x", token_count=32, steps=4),
        p.ToolCallStarted(
            call_id="c1",
            name="edit_file",
            kind="edit",
            arguments={"path": "calc.py"},
            summary="calc.py",
        ),
        p.ToolCallFinished(
            call_id="c1",
            name="edit_file",
            status="ok",
            result="edited",
            display=p.FileEdit(path="calc.py", diff=DIFF, replacements=1),
            duration=0.01,
        ),
        p.ToolCallStarted(
            call_id="c2",
            name="shell",
            kind="execute",
            arguments={"command": "python -m pytest -q"},
            summary="python -m pytest -q",
        ),
        p.ToolCallFinished(
            call_id="c2",
            name="shell",
            status="ok",
            result="".join(f"test_{i} PASSED\n" for i in range(12)) + "12 passed in 0.03s\n",
            display=p.CommandRun(command="python -m pytest -q", exit_code=0, duration=1.2),
            duration=1.2,
        ),
        p.ContentDelta(text="Fixed: `add` now adds, and the 12 tests pass."),
        p.BlockCommitted(block=1, text="x", token_count=16, steps=3),
        p.UsageReport(
            prompt_tokens=5210,
            completion_tokens=180,
            context_window=131072,
            tokens_per_second=512.0,
            blocks_per_second=16.0,
        ),
        p.TurnFinished(turn=1, status="completed", final_text="Fixed."),
    ]


def approval() -> list[Any]:
    """The model wants to run a command and waits for the user."""
    args = {"command": "rm -rf build && python -m build --wheel"}
    return [
        p.TurnStarted(turn=1, text="build a wheel"),
        p.ContentDelta(text="I'll clean the build directory and build a wheel."),
        p.ToolCallStarted(
            call_id="c1", name="shell", kind="execute", arguments=args, summary=args["command"]
        ),
        p.ApprovalRequested(
            request_id="r1",
            call_id="c1",
            name="shell",
            kind="execute",
            summary=args["command"],
            arguments=args,
            prefix="rm",
        ),
    ]


def error() -> list[Any]:
    """The engine dropped the stream mid-block."""
    return [
        p.TurnStarted(turn=1, text="explain calc.py"),
        p.ContentDelta(text="`calc.py` defines one function, `add`, wh"),
        p.ErrorEvent(
            message="the model server closed the stream mid-response (after 1 block); "
            "what arrived is kept. Check the server, then send the prompt again."
        ),
        p.TurnFinished(turn=1, status="failed"),
    ]


def running_command() -> list[Any]:
    """A turn running a shell command: the working line says which."""
    args = {"command": "python -m pytest -q tests/test_calc.py"}
    return [
        p.TurnStarted(turn=1, text="run the tests"),
        p.ContentDelta(text="Running the tests."),
        p.BlockCommitted(block=0, text="Running the tests.", token_count=8, steps=3),
        p.ToolCallStarted(
            call_id="c1", name="shell", kind="execute", arguments=args, summary=args["command"]
        ),
        p.ToolOutput(call_id="c1", text="test_calc.py::test_add "),
    ]


def long_edit_diff(lines: int = 60) -> str:
    """A real-looking diff of one file with many changed lines."""
    body = "".join(
        f"-    value_{i} = compute({i})\n+    value_{i} = compute({i}, fast=True)\n"
        for i in range(lines // 2)
    )
    return (
        "--- a/src/engine.py\n+++ b/src/engine.py\n"
        f"@@ -40,{lines // 2 + 2} +40,{lines // 2 + 2} @@\n def run():\n"
        + body
        + "     return value_0\n"
    )


def edit_approval() -> list[Any]:
    """An edit waiting for approval, with a diff longer than the screen."""
    args = {"path": "src/engine.py", "old_string": "x", "new_string": "y"}
    return [
        p.TurnStarted(turn=1, text="make it fast"),
        p.ToolCallStarted(
            call_id="c1", name="edit_file", kind="edit", arguments=args, summary="src/engine.py"
        ),
        p.ApprovalRequested(
            request_id="r1",
            call_id="c1",
            name="edit_file",
            kind="edit",
            summary="src/engine.py",
            arguments=args,
            diff=long_edit_diff(),
        ),
    ]


def failed_command() -> list[Any]:
    """A finished turn whose command exited 1."""
    args = {"command": "python -m pytest -q"}
    return [
        p.TurnStarted(turn=1, text="run the tests"),
        p.ToolCallStarted(
            call_id="c1", name="shell", kind="execute", arguments=args, summary=args["command"]
        ),
        p.ToolCallFinished(
            call_id="c1",
            name="shell",
            status="ok",
            result="F.\nFAILED test_calc.py::test_add - assert -1 == 3\n1 failed, 1 passed\n",
            display=p.CommandRun(command=args["command"], exit_code=1, duration=0.8),
            duration=0.8,
        ),
        p.ContentDelta(text="One test fails: `add` subtracts."),
        p.BlockCommitted(block=0, text="x", token_count=3, steps=1),
        p.UsageReport(
            prompt_tokens=900, completion_tokens=3, context_window=131072, tokens_per_second=9000.0
        ),
        p.TurnFinished(turn=1, status="completed", final_text="One test fails."),
    ]


LONG_MODEL = p.SessionStarted(
    session_id="20260101-000000-abcdef",
    cwd="/work/demo",
    engine="remote",
    model="Qwen/Qwen3-Coder-480B-A35B-Instruct-FP8-dynamic-preview",
    sandbox="docker",
    approval="auto-edit",
    transcript="/tmp/x.jsonl",
)


def _parser_section(n: int) -> str:
    return (
        f"## Step {n}: the tokenizer\n\n"
        f"Step {n} reads the input one line at a time and keeps the `offset` of each token, "
        "so an error can point at the column where it starts. **Whitespace** is skipped "
        "but counted.\n\n"
        f"- `Token.kind` names the rule that matched (step {n})\n"
        "- `Token.text` is the slice of the line\n\n"
        f"```python\ndef tokens_{n}(line: str) -> list[Token]:\n"
        "    return [Token(m.lastgroup, m.group()) for m in RULES.finditer(line)]\n```\n\n"
    )


def long_answer() -> list[Any]:
    """A finished answer long enough to be drawn as several parts, streamed in blocks."""
    text = "".join(_parser_section(n) for n in range(1, 9)) + "That is the whole parser."
    events: list[Any] = [p.TurnStarted(turn=1, text="explain the parser")]
    for block, start in enumerate(range(0, len(text), 120)):
        piece = text[start : start + 120]
        events += [
            p.ContentDelta(text=piece),
            p.BlockCommitted(block=block, text=piece, token_count=32, steps=5),
        ]
    events.append(p.TurnFinished(turn=1, status="completed", final_text=text))
    return events
