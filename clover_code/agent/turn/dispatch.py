"""Running the model's tool calls: validation, approval, execution, results.

What decides whether a well-formed call may run (hooks, the approval mode's rules,
the user) is ``call_checks``; the call itself and its result are ``tool_call``.

A malformed call (unknown tool, arguments that do not parse, hostile values
that ``Tool.screen`` refuses, arguments that do not match the schema) never
reaches the permission check or the tool: it becomes an error result that
tells the model what to fix. ``screen`` runs before the call is recorded, so
the transcript and the events only ever carry a safe copy of the arguments.

No single call can end the session: an unexpected exception from the
permission check, the approver or the tool becomes a failed result and an
error event (its traceback goes to this module's logger at debug level).
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from pydantic import BaseModel, ValidationError

from clover_code import protocol as p
from clover_code.agent.extensions.hooks import HookRunner
from clover_code.agent.permissions.approval import Approver
from clover_code.agent.permissions.edit_preview import EditAllowance
from clover_code.agent.permissions.policy import PermissionPolicy
from clover_code.agent.turn.call_checks import CallChecks, headline
from clover_code.agent.turn.call_text import printable_result, problem
from clover_code.agent.turn.early import EarlyCalls, Slot
from clover_code.agent.turn.options import TurnOptions
from clover_code.agent.turn.plan import PLAN_MODE, plan_tools
from clover_code.agent.turn.plan import refusal as plan_refusal
from clover_code.agent.turn.tool_call import ToolCall, rated
from clover_code.config.settings import ApprovalMode
from clover_code.errors import CloverError
from clover_code.protocol.json_text import printable
from clover_code.tools.arguments import CONTENT_LIMIT, screen_arguments
from clover_code.tools.base import Tool, ToolContext, ToolResult
from clover_code.tools.spill import OutputSpill

log = logging.getLogger(__name__)


class ToolDispatcher(CallChecks):
    """Runs tool calls for an agent and reports them as protocol events."""

    def __init__(
        self,
        *,
        tools: Sequence[Tool[Any]],
        context: ToolContext,
        approver: Approver,
        approval_mode: ApprovalMode,
        policy: PermissionPolicy,
        spill: OutputSpill,
        emit: p.Emit,
        on_todo: Callable[[list[dict[str, Any]]], None],
        hooks: HookRunner | None = None,
        ceiling: ApprovalMode = "full-auto",
    ) -> None:
        self.tools = {tool.name: tool for tool in tools}
        self.ceiling: ApprovalMode = ceiling
        """The loosest approval mode allowed (an administrator's max_approval)."""
        self.context = context
        self.approver = approver
        self.approval_mode: ApprovalMode = approval_mode
        self.policy = policy
        self.spill = spill
        self.emit = emit
        self.on_todo = on_todo
        self.hooks = hooks
        self.edits = EditAllowance()
        self._plan_tools = plan_tools(tools)

    def offered(self, turn: TurnOptions) -> frozenset[str] | None:
        """The tools the model may call in ``turn`` (None: every tool): its allowed
        tools (a custom command's), narrowed further in plan mode."""
        if self.approval_mode != PLAN_MODE:
            return turn.allowed_tools
        if turn.allowed_tools is None:
            return self._plan_tools
        return self._plan_tools & turn.allowed_tools

    def screen(self, calls: list[ToolCall]) -> None:
        """Check each call's raw arguments and keep only a safe copy of them.

        Runs before the calls are recorded: lone surrogates, huge strings and
        non-finite numbers never reach the transcript or the front ends.
        """
        for call in calls:
            if call.screened:
                continue
            tool = self.tools.get(call.name)
            if tool is not None:
                screened = tool.screen(call.arguments)
            else:
                screened = screen_arguments(call.arguments, limits={}, default_limit=CONTENT_LIMIT)
            call.arguments, call.problem, call.screened = screened.arguments, screened.problem, True

    def may_change_things(self, calls: list[ToolCall]) -> bool:
        """Whether a call may have effects (an edit, a command, an MCP tool, a child
        agent): only reads, searches and fetches are known to have none."""
        for call in calls:
            tool = self.tools.get(call.name)
            if tool is not None and tool.kind not in ("read", "search", "fetch"):
                return True
        return False

    async def run_calls(
        self, calls: list[ToolCall], turn: TurnOptions, early: EarlyCalls[ToolCall] | None = None
    ) -> None:
        """Run calls in order; consecutive read-only (or ``concurrent``) calls run concurrently.

        Calls ``early`` started while the response came are waited for in their place."""
        batch: list[ToolCall] = []
        for call in calls:
            tool = self.tools.get(call.name)
            if early is not None and early.started(call.id):
                batch.append(call)
                continue
            if tool is not None and (tool.kind in ("read", "search") or tool.concurrent):
                batch.append(call)
                continue
            if batch:
                await asyncio.gather(*(self._run_or_finish(c, turn, early) for c in batch))
                batch = []
            await self._run_or_finish(call, turn, early)
        if batch:
            await asyncio.gather(*(self._run_or_finish(c, turn, early) for c in batch))

    async def _run_or_finish(
        self, call: ToolCall, turn: TurnOptions, early: EarlyCalls[ToolCall] | None
    ) -> None:
        if early is None:
            await self.run_call(call, turn)
        elif early.started(call.id):
            await early.finish(call.id)
        else:
            # Hooks and approvals in the order of the calls: after the early ones'.
            await early.checked()
            await self.run_call(call, turn)

    async def run_call(self, call: ToolCall, turn: TurnOptions, slot: Slot | None = None) -> None:
        """Validate, approve and run one call of ``turn``; its result is always set.

        ``slot``: the call started before its response ended (``EarlyCalls``): its
        checks wait for the calls before it, and its events are held by the slot."""
        emit = self.emit if slot is None else slot.emit
        if slot is not None:
            await slot.my_turn()
        self.screen([call])
        tool = self.tools.get(call.name)
        started = time.monotonic()
        if tool is None:
            known = ", ".join(sorted(self.tools))
            self._malformed(call, f"unknown tool '{call.name}'. Available tools: {known}.", emit)
            return
        if call.parse_error:
            self._malformed(call, f"{call.parse_error}\n{self._schema_hint(tool)}", emit)
            return
        if call.problem:
            self._malformed(call, f"invalid arguments for tool '{tool.name}': {call.problem}", emit)
            return
        try:
            args = tool.Args.model_validate(call.arguments)
        except ValidationError as exc:
            problems = ", ".join(problem(e) for e in exc.errors()[:5])
            schema = json.dumps(tool.spec().parameters)
            self._malformed(
                call,
                f"invalid arguments for tool '{tool.name}': {problems}; send arguments that "
                f"match its JSON schema {schema}",
                emit,
            )
            return
        hook_refusal, approved = None, False
        if self.hooks is not None and self.hooks.has("PreToolUse"):
            args, hook_refusal, approved = await self._pre_tool_hooks(call, tool, args)
        summary = headline(tool, args)
        emit(
            p.ToolCallStarted(
                call_id=call.id,
                name=tool.name,
                kind=tool.kind,
                arguments=call.arguments,
                summary=summary,
            )
        )
        offered = self.offered(turn)
        if self.approval_mode == PLAN_MODE and offered is not None and tool.name not in offered:
            hook_refusal = plan_refusal(offered)
        elif turn.allowed_tools is not None and tool.name not in turn.allowed_tools:
            allowed = ", ".join(sorted(turn.allowed_tools)) or "none"
            hook_refusal = f"refused: this command allows only these tools: {allowed}."
        try:
            if slot is not None and hook_refusal is None and self.verdict(tool, args) == "ask":
                # A hook changed the call: ask only once the response is whole.
                await slot.response_ended()
            refusal = hook_refusal
            if refusal is None:
                refusal, args = await self._approve(call, tool, args, summary, approved)
        except Exception as exc:
            self._unexpected(call, tool, exc, "check", started, emit)
            return
        if refusal is not None:
            call.result = refusal
            self._finish(call, "denied", refusal, None, started, emit)
            return
        if slot is not None:
            slot.admit()
        started = time.monotonic()  # the duration is the run's, not the wait for the user
        streamed: list[str] = []
        try:
            result = await self._execute(call, tool, args, streamed, turn, emit)
            call.result = self.spill.fit(call.id, result.text, "".join(streamed) or None)
        except Exception as exc:
            self._unexpected(call, tool, exc, "run", started, emit)
            return
        if isinstance(result.display, p.TodoList):
            self.on_todo([item.model_dump() for item in result.display.todo])
        for notice in result.notices:
            emit(p.Notice(level="warning", text=notice))
        status = "error" if result.is_error else "ok"
        shown = result.text
        if self.hooks is not None and self.hooks.has("PostToolUse"):
            response = {"result": result.text, "is_error": result.is_error}
            data = {"tool_name": tool.name, "tool_input": call.arguments, "tool_response": response}
            after = await self.hooks.run("PostToolUse", data, tool=tool.name)
            if after.blocked:
                # What the model sees gets the hook's reason, and so does the event.
                note = f"\n\n[PostToolUse hook] {after.reason}"
                call.result += note
                shown += note
        self._finish(call, status, shown, result.display, started, emit)

    def _unexpected(
        self,
        call: ToolCall,
        tool: Tool[Any],
        exc: Exception,
        stage: str,
        started: float,
        emit: p.Emit,
    ) -> None:
        """An exception nobody meant to raise: a failed call and an error event, not a crash."""
        log.debug("tool call %s (%s) failed to %s", call.id, tool.name, stage, exc_info=exc)
        detail = f"{type(exc).__name__}: {exc}"[:300]
        message = (
            f"the '{tool.name}' call failed unexpectedly ({detail}); it did not complete, "
            "so try another way (and report this as a bug)."
        )
        call.result = f"error: {message}"
        emit(p.ErrorEvent(message=message))
        self._finish(call, "error", call.result, None, started, emit)

    async def _execute(
        self,
        call: ToolCall,
        tool: Tool[Any],
        args: BaseModel,
        streamed: list[str],
        turn: TurnOptions,
        emit: p.Emit,
    ) -> ToolResult:
        def on_output(text: str) -> None:
            text = printable(text)
            streamed.append(text)
            emit(p.ToolOutput(call_id=call.id, text=text))

        try:
            context = replace(
                self.context,
                on_output=on_output,
                call_id=call.id,
                allowed_tools=turn.allowed_tools,
            )
            result = await tool.run(args, context)
        except CloverError as exc:
            result = ToolResult(text=f"error: {exc}", is_error=True)
        return printable_result(result)

    def _malformed(self, call: ToolCall, message: str, emit: p.Emit) -> None:
        call.malformed = True
        call.result = f"error: {message}"
        emit(
            p.ToolCallStarted(
                call_id=call.id, name=call.name, kind="other", arguments=call.arguments, summary=""
            )
        )
        self._finish(call, "error", call.result, None, time.monotonic(), emit)

    def _finish(
        self,
        call: ToolCall,
        status: Any,
        text: str,
        display: p.ToolDisplay | None,
        started: float,
        emit: p.Emit,
    ) -> None:
        emit(
            p.ToolCallFinished(
                call_id=call.id,
                name=call.name,
                status=status,
                result=text,
                display=display,
                duration=time.monotonic() - started,
                low_confidence=rated(call, self.tools.get(call.name), display),
            )
        )

    @staticmethod
    def _schema_hint(tool: Tool[Any]) -> str:
        return f"The arguments of '{tool.name}' must match this JSON schema: " + json.dumps(
            tool.spec().parameters
        )
