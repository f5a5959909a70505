"""One task to its end: ``run`` (blocking) and ``arun`` (a coroutine).

The task runs as ``clover-code --task`` would (``clover_code.headless.run``),
in this process: the same session, limits, patch, auto-commit and result. It
returns the ``TaskResult`` that ``--output-format json`` prints, one shape
for success and failure: a refused API key, an unreachable server or a limit
is a result with ``status`` and ``exit_code``, not an exception. Only the
options themselves raise, before anything runs (``ConfigError``,
``UsageError``).
"""

from __future__ import annotations

import asyncio
import io
from pathlib import Path
from typing import Any

from clover_code.errors import UsageError
from clover_code.headless.embedding import Embedding
from clover_code.headless.run import run_task
from clover_code.outcome.result import TaskResult
from clover_code.sdk.approval import ApprovalCallback
from clover_code.sdk.options import HookTable, Options, ToolList

__all__ = ["arun", "run"]


async def arun(
    task: str,
    *,
    cwd: str | Path = ".",
    can_use_tool: ApprovalCallback | None = None,
    tools: ToolList = (),
    hooks: HookTable | None = None,
    resume: str | None = None,
    trust_project: bool = False,
    **options: Any,
) -> TaskResult:
    """Run ``task`` in the project at ``cwd`` and return its result.

    ``options`` are settings (``base_url="http://localhost:30000/v1"``,
    ``model=...``, ``approval="auto-edit"``, ``max_turns=20`` ...);
    ``can_use_tool`` answers what the approval mode asks (without it, asking
    refuses, as headless does); ``tools`` and ``hooks`` are Python functions;
    ``resume`` continues a session by id ("" for the latest in ``cwd``)."""
    if not task.strip():
        raise UsageError("the task is empty; say what the agent should do.")
    read = await asyncio.to_thread(
        Options.read,
        options,
        cwd=cwd,
        can_use_tool=can_use_tool,
        tools=tools,
        hooks=hooks,
        resume=resume,
        trust_project=trust_project,
    )
    out, err = io.StringIO(), io.StringIO()
    await run_task(
        read.settings,
        task,
        read.cwd,
        output_format="json",
        resume=read.resume,
        out=out,
        err=err,
        embedding=Embedding(
            approver=read.approver, approval=read.approval, tools=read.tools, hooks=read.hooks
        ),
        confidence_notice=True,  # the result's edits carry fill confidences
    )
    return TaskResult.model_validate_json(out.getvalue().strip().splitlines()[-1])


def run(
    task: str,
    *,
    cwd: str | Path = ".",
    can_use_tool: ApprovalCallback | None = None,
    tools: ToolList = (),
    hooks: HookTable | None = None,
    resume: str | None = None,
    trust_project: bool = False,
    **options: Any,
) -> TaskResult:
    """``arun`` for a program without an event loop of its own: it blocks until the
    task ends (``UsageError`` inside a running loop: await ``arun`` there)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        pass
    else:
        raise UsageError(
            "clover_code.sdk.run blocks, so it cannot run inside an event loop; "
            "use await clover_code.sdk.arun(...) there."
        )
    return asyncio.run(
        arun(
            task,
            cwd=cwd,
            can_use_tool=can_use_tool,
            tools=tools,
            hooks=hooks,
            resume=resume,
            trust_project=trust_project,
            **options,
        )
    )
